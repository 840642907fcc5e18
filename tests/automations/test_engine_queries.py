"""Event processing pays nothing for automations nobody listens with: after a project's
trigger map is built, an event whose name no trigger or wait names costs no query."""

from collections.abc import Iterator

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from automations.services.triggers import STAMP_KEY, project_triggers
from events.services.processing import events_process_batch
from tests.automations.engine import automation, event, forget_triggers, runs

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_triggers() -> Iterator[None]:
    forget_triggers()
    yield
    forget_triggers()


@pytest.fixture
def key(world):
    return world.keys["project"]


def exit_on(name: str) -> dict:
    return {
        "trigger": {"event": name},
        "start": "done",
        "steps": [{"key": "done", "type": "exit", "next": None}],
    }


def automation_queries(api, key, count: int) -> list[str]:
    for n in range(count):
        event(api, key, "page.viewed", email=f"u{n % 3}@example.net", payload={"n": n})
    with CaptureQueriesContext(connection) as queries:
        assert events_process_batch().claimed >= count
    return [q["sql"] for q in queries.captured_queries if "automations_" in q["sql"]]


def test_a_project_without_automations_pays_no_query_per_event(api, key):
    event(api, key, "page.viewed")
    events_process_batch()  # builds the (empty) map once
    assert automation_queries(api, key, 20) == []


def test_twenty_automations_that_do_not_match_cost_no_query_either(api, key):
    for n in range(20):
        automation(api, key, exit_on(f"order.step_{n}"))
    event(api, key, "page.viewed")
    events_process_batch()
    assert automation_queries(api, key, 20) == []


def test_a_publish_is_seen_at_once_here_and_by_other_processes_after_the_ttl(
    api, key, world, settings
):
    event(api, key, "signup")
    events_process_batch()
    assert project_triggers(world.project.id).by_event == {}
    automation_id = automation(api, key, exit_on("signup"))
    # This process forgot its map at once.
    assert set(project_triggers(world.project.id).by_event) == {"signup"}

    # Another process's map: older than the TTL, with a stamp the cache no longer has.
    settings.AUTOMATIONS_TRIGGER_MAP_TTL_SECONDS = 0
    stale = project_triggers(world.project.id)
    stale.by_event = {}
    cache.set(STAMP_KEY.format(project_id=world.project.id), "another", timeout=None)
    event(api, key, "signup")
    events_process_batch()
    assert len(runs(api, key, automation_id)) == 1
