"""Usage on the running product: the events a project sends show in GET /project/usage,
counted once, whichever process counted them."""

import time

from tests.e2e.client import Api, unique, until_value

EVENTS = 5
# How often each process adds its counts to the shared ones (USAGE_FLUSH_SECONDS), with a
# margin: two reads this far apart that agree hold every count made before the first.
FLUSH_SECONDS = 1.5


def events_ingested(api: Api) -> int:
    return int(api.get("/project/usage")["totals"]["events_ingested"])


def settled_count(api: Api) -> int:
    """The count once earlier tests' last counts have been flushed: two reads a flush
    apart agree."""
    last = events_ingested(api)
    for _ in range(5):
        time.sleep(FLUSH_SECONDS)
        now = events_ingested(api)
        if now == last:
            return now
        last = now
    raise AssertionError(f"events_ingested kept moving: {last}")


def test_usage_counts_the_events_sent_once(api):
    before = settled_count(api)
    email = unique("counted-") + "@example.com"
    for _ in range(EVENTS):
        api.event(unique("page.viewed."), email)

    usage = until_value(
        lambda: api.get("/project/usage"),
        lambda usage: usage["totals"]["events_ingested"] >= before + EVENTS,
        f"{EVENTS} more events_ingested than {before}",
    )

    assert settled_count(api) == before + EVENTS
    assert usage["days"][-1]["events_ingested"] >= EVENTS, usage["days"][-1]
