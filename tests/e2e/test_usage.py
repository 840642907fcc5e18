"""Usage on the running product: the events a project sends show in GET /project/usage,
whichever process counted them."""

from tests.e2e.client import unique, until_value

EVENTS = 5


def test_usage_counts_the_events_sent(api):
    before = api.get("/project/usage")["totals"]["events_ingested"]
    email = unique("counted-") + "@example.com"
    for _ in range(EVENTS):
        api.event(unique("page.viewed."), email)

    usage = until_value(
        lambda: api.get("/project/usage"),
        lambda usage: usage["totals"]["events_ingested"] >= before + EVENTS,
        f"{EVENTS} more events_ingested than {before}",
    )

    assert usage["totals"]["events_ingested"] == before + EVENTS, usage["totals"]
    assert usage["days"][-1]["events_ingested"] >= EVENTS, usage["days"][-1]
