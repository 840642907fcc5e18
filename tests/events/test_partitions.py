"""The events table partitioned by acceptance time: a partition goes, with its idempotency
keys, only when no project's `event_retention_days` keeps a row of it (shorter policies
apply row by row meanwhile), and a resend finds its event in any partition."""

import datetime as dt
from typing import Any

import pytest
from django.db import connection

from config.celery import maintain_partitions
from config.db.cursor import binary_cursor
from config.db.partitions import partition_name, partitions_list, partitions_make
from config.registries.partitions import partitioned_tables
from events.models import Event, EventKey
from events.services.ingest import event_ingest
from events.services.processing import events_process_batch
from events.services.retention import events_purge_expired
from events.validation import EventInput

pytestmark = pytest.mark.django_db

UTC = dt.UTC


def at(year: int, month: int, day: int = 1) -> dt.datetime:
    return dt.datetime(year, month, day, tzinfo=UTC)


def _events_table():
    return next(declared for declared in partitioned_tables() if declared.table == "events_event")


def _ingest(project, key: str | None):
    item = EventInput(
        event="order.completed",
        email="buyer@example.com",
        external_id=None,
        contact_ref=None,
        payload_json="{}",
        occurred_at=None,
        idempotency_key=key,
    )
    return event_ingest(project=project, item=item)


def test_an_events_partition_goes_only_when_no_project_keeps_its_rows(world, clock, settings):
    settings.PARTITIONS_AHEAD = 1
    for project, days in [(world.project, 30), (world.other_project, 400)]:
        project.event_retention_days = days
        project.save()
    world.foreign_project.event_retention_days = 30
    world.foreign_project.save()
    clock.set(dt.datetime(2025, 3, 10, 12, tzinfo=UTC))
    short = _ingest(world.project, "short-1")
    long = _ingest(world.other_project, "long-1")
    march = partition_name("events_event", at(2025, 3))

    # Two months on: March 2025 has its partition (its rows moved out of the default one).
    clock.set(dt.datetime(2025, 5, 10, tzinfo=UTC))
    maintain_partitions()
    assert {p.name for p in partitions_list("events_event")} >= {march}
    assert Event.objects.get(id=long.id).created_at == long.received_at

    # The 30-day project's event goes row by row with its key; the 400-day one's stays,
    # and so does the partition: the longest policy still keeps a row of it.
    assert events_purge_expired() == 1
    assert not EventKey.objects.filter(event_id=short.id).exists()
    result = maintain_partitions()
    assert result["events_event"]["dropped"] == []
    assert _ingest(world.other_project, "long-1").duplicate

    # Once no project keeps rows that old, the partition goes with its keys; partitions
    # ahead and the default one stay.
    world.other_project.event_retention_days = 30
    world.other_project.save()
    result = maintain_partitions()
    assert march in result["events_event"]["dropped"]
    names = {p.name for p in partitions_list("events_event")}
    assert march not in names
    assert {"events_event_default", partition_name("events_event", at(2025, 6))} <= names
    assert not Event.objects.filter(id=long.id).exists()
    assert not EventKey.objects.filter(event_id=long.id).exists()
    # A resend after retention is a new event.
    assert not _ingest(world.other_project, "long-1").duplicate
    assert _events_table().column == "created_at"


def test_a_resend_finds_its_event_across_partitions(world, clock):
    clock.set(dt.datetime(2025, 1, 31, 23, 59, tzinfo=UTC))
    first = _ingest(world.project, "order-7")
    clock.set(dt.datetime(2025, 2, 1, 0, 1, tzinfo=UTC))
    partitions_make("events_event", "created_at", since=at(2025, 1))

    again = _ingest(world.project, "order-7")

    assert again.duplicate
    assert again.id == first.id
    assert Event.objects.filter(idempotency_key="order-7").count() == 1


def _index_names(plan: object) -> set[str]:
    if isinstance(plan, dict):
        names = {plan["Index Name"]} if "Index Name" in plan else set()
        return names.union(*(_index_names(value) for value in plan.values()))
    if isinstance(plan, list):
        return set().union(*(_index_names(value) for value in plan))
    return set()


@pytest.mark.parametrize(
    ("where", "order", "parent"),
    [
        (
            "status IN ('accepted', 'failed') AND next_attempt_at <= %s",
            "next_attempt_at",
            "event_due_idx",
        ),
        ("status = 'processing' AND lease_expires_at <= %s", "lease_expires_at", "event_lease_idx"),
    ],
)
def test_the_claim_reads_each_partitions_share_of_the_kits_index(
    world, clock, where, order, parent
):
    for month in (1, 2):
        clock.set(dt.datetime(2025, month, 10, tzinfo=UTC))
        _ingest(world.project, None)
    partitions_make("events_event", "created_at", since=at(2025, 1))

    # The claim's pick (config/workqueue/claiming.py), with scans other than by index
    # priced out: whether the planner can use the partial indexes at all, on tables this small.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            f"EXPLAIN (FORMAT JSON) SELECT id FROM events_event WHERE {where} "  # noqa: S608
            f"ORDER BY {order} LIMIT 10 FOR UPDATE SKIP LOCKED",
            [clock.current],
        )
        used = _index_names(cursor.fetchone()[0])
        cursor.execute(
            "SELECT DISTINCT p.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE c.relname = ANY(%s)",
            [list(used)],
        )
        parents = {row[0] for row in cursor.fetchall()}
    assert parents == {parent}
    # ... in each partition that holds rows.
    for month in (1, 2):
        partition = partition_name("events_event", at(2025, month))
        assert any(name.startswith(f"{partition}_") for name in used)


def _plan_partitions(plan: object) -> set[str]:
    """The partitions of the events table a plan reads."""
    if isinstance(plan, dict):
        name = str(plan.get("Relation Name", ""))
        names = {name} if name.startswith("events_event_") else set()
        return names.union(*(_plan_partitions(value) for value in plan.values()))
    if isinstance(plan, list):
        return set().union(*(_plan_partitions(value) for value in plan))
    return set()


def test_a_batchs_relock_and_done_mark_read_the_partitions_of_its_events_alone(world, clock):
    events = {}
    for month in (1, 2, 3):
        clock.set(at(2025, month, 10))
        events[month] = _ingest(world.project, None).id
    partitions_make("events_event", "created_at", since=at(2025, 1))
    Event.objects.filter(pk=events[2]).update(status="processed")
    clock.set(at(2025, 3, 20))
    seen: list[tuple[str, Any]] = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        assert events_process_batch().claimed == 2

    relock = [
        (sql, params)
        for sql, params in seen
        if sql.startswith('SELECT "events_event"') and "FOR UPDATE" in sql
    ]
    done = [(sql, params) for sql, params in seen if sql.startswith('UPDATE "events_event" SET')]
    assert len(relock) == 1
    assert len(done) == 1
    wanted = {partition_name("events_event", at(2025, month)) for month in (1, 3)}
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {relock[0][0]}", relock[0][1])
        assert _plan_partitions(cursor.fetchone()[0]) == wanted
    # The done mark is bound on the server (config/db/bulk.py): its plan, with the values.
    with binary_cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {done[0][0]}", done[0][1])
        assert _plan_partitions(cursor.fetchone()[0]) == wanted
    assert set(Event.objects.filter(pk__in=events.values()).values_list("status", flat=True)) == {
        "processed"
    }
