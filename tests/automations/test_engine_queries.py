"""Event processing pays little for automations nobody listens with: after a project's
trigger map is built, an event whose name no trigger or wait names costs no query, and a
batch one key lookup (the project's trigger stamp, which says whether the map is still
the project's)."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from automations.models import TriggerStamp
from automations.services.triggers import project_triggers
from events.services.processing import events_process_batch
from tests.automations.api_driver import action, automation, event, runs
from tests.automations.factories import AutomationFactory

pytestmark = pytest.mark.django_db


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


def stamp_reads(queries: list[str]) -> list[str]:
    return [sql for sql in queries if TriggerStamp._meta.db_table in sql]


def test_a_project_without_automations_pays_one_key_lookup_per_batch(api, key):
    event(api, key, "page.viewed")
    events_process_batch()  # builds the (empty) map once
    queries = automation_queries(api, key, 20)
    assert len(queries) == 1
    assert stamp_reads(queries) == queries


def test_twenty_automations_that_do_not_match_cost_no_query_per_event_either(api, key):
    for n in range(20):
        automation(api, key, exit_on(f"order.step_{n}"))
    event(api, key, "page.viewed")
    events_process_batch()
    queries = automation_queries(api, key, 20)
    assert len(queries) == 1
    assert stamp_reads(queries) == queries


def test_a_batch_of_three_projects_reads_their_stamps_in_one_statement(api, key, world):
    keys = [key, world.keys["other_project"], world.keys["foreign"]]
    for each in keys:
        automation(api, each, exit_on("signup"))
        event(api, each, "page.viewed")
    events_process_batch()
    for n in range(9):
        event(api, keys[n % 3], "page.viewed", email=f"u{n % 2}@example.net")
    with CaptureQueriesContext(connection) as queries:
        assert events_process_batch().claimed >= 9
    sql = [q["sql"] for q in queries.captured_queries if "automations_" in q["sql"]]
    assert len(sql) == 1
    assert stamp_reads(sql) == sql


def test_a_map_is_rebuilt_exactly_when_the_stamp_moved(api, key, world):
    """A change committed by another process is told to this one by the stamp alone: a
    map built before it is kept while the stamp stands, and replaced by the next batch
    once the stamp moved, with no time in between."""
    event(api, key, "signup")
    events_process_batch()
    assert project_triggers(world.project.id).by_event == {}
    # Another process published (rows made without this process's service code).
    made = AutomationFactory(project=world.project, published=True)
    made.current_published_version.definition = exit_on("signup")
    made.current_published_version.save()
    assert project_triggers(world.project.id).by_event == {}  # same stamp: same map
    event(api, key, "signup")
    events_process_batch()
    assert runs(api, key, str(made.id)) == []

    TriggerStamp.objects.update_or_create(project=world.project, defaults={"stamp": uuid.uuid4()})
    event(api, key, "signup")
    events_process_batch()
    assert len(runs(api, key, str(made.id))) == 1


def test_each_lifecycle_change_writes_a_new_stamp(api, key, world):
    def stamp() -> uuid.UUID | None:
        return (
            TriggerStamp.objects.filter(project=world.project)
            .values_list("stamp", flat=True)
            .first()
        )

    assert stamp() is None
    automation_id = automation(api, key, exit_on("signup"), publish=False)
    assert stamp() is None  # a draft changes no trigger
    seen = set()
    for name in ("publish", "pause", "resume", "archive"):
        action(api, key, automation_id, name)
        seen.add(stamp())
    assert None not in seen
    assert len(seen) == 4
    assert api.delete(f"/automations/{automation_id}", key=key).status_code in (200, 204)
    assert stamp() not in seen
