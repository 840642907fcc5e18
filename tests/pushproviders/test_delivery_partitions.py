"""Push deliveries partitioned by their message's time: a message's deliveries in one
partition, read there, one per installation as before; the work-queue claim still reads
the kit's partial indexes in each partition; no partition is dropped while push has no
retention policy; and the migration converts a table with rows, and back."""

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from bench import keys
from config.celery import maintain_partitions
from config.db.bulk import rows_fetch
from config.db.partitions import partition_name, partitions_list
from pushproviders.models import PushDelivery, PushMessage
from pushproviders.queue import PUSH_QUEUE
from pushproviders.services.outcomes import push_messages_roll_up
from tests.pushproviders.factories import (
    PushDeliveryFactory,
    PushInstallationFactory,
    PushMessageFactory,
)
from tests.pushproviders.sending import push_world

pytestmark = pytest.mark.django_db

UTC = dt.UTC
TABLE = "pushproviders_pushdelivery"


def at(year: int, month: int, day: int = 1) -> dt.datetime:
    return dt.datetime(year, month, day, tzinfo=UTC)


@pytest.fixture
def push(api, world):
    push = push_world(api, world)
    push.fcm()
    push.apns()
    return push


@pytest.fixture
def ada(push):
    return push.contact(first_name="Ada")


@pytest.fixture
def devices(push, ada):
    return [
        push.install(ada, "fcm", "fcm-device-token-0001"),
        push.install(ada, "apns", keys.APNS_TOKEN),
    ]


def _homes(message_id) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT tableoid::regclass::text FROM {TABLE} WHERE message_id = %s",  # noqa: S608
            [message_id],
        )
        return {row[0] for row in cursor.fetchall()}


def _plan(sql: str, params: list) -> object:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        return cursor.fetchone()[0]


def _nodes(plan: object) -> list[dict]:
    if isinstance(plan, dict):
        return [plan, *(node for value in plan.values() for node in _nodes(value))]
    if isinstance(plan, list):
        return [node for value in plan for node in _nodes(value)]
    return []


def test_a_messages_deliveries_live_in_its_partition_and_none_is_dropped(
    push, ada, devices, clock, settings
):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 3, 10))
    response = push.send({"contact_id": str(ada.id), "title": "Hi", "body": "Shipped"})
    assert response.status_code == 202, response.content
    message = PushMessage.objects.get(pk=response.json()["data"]["id"])
    assert set(PushDelivery.objects.values_list("message_created_at", flat=True)) == {
        message.created_at
    }
    maintain_partitions()
    march = partition_name(TABLE, at(2025, 3))
    assert _homes(message.id) == {march}

    read = push.api.get(f"/push/messages/{message.id}", key=push.key)
    assert read.status_code == 200
    assert [d["installation_id"] for d in read.json()["data"]["deliveries"]] == [
        str(device.id) for device in devices
    ]
    # Still one delivery per installation of a message.
    with pytest.raises(IntegrityError), transaction.atomic():
        PushDeliveryFactory(message=message, installation=devices[0])

    # No retention policy for push: years on, every partition stays.
    clock.set(at(2036, 1, 1))
    assert maintain_partitions()[TABLE]["dropped"] == []
    assert march in {p.name for p in partitions_list(TABLE)}
    assert PushDelivery.objects.filter(message=message).count() == 2


@pytest.mark.parametrize(
    ("where", "order", "parent"),
    [
        (
            "status IN ('accepted', 'failed') AND next_attempt_at <= %s",
            "next_attempt_at",
            "pushdelivery_due_idx",
        ),
        (
            "status = 'processing' AND lease_expires_at <= %s",
            "lease_expires_at",
            "pushdelivery_lease_idx",
        ),
    ],
)
def test_the_claim_reads_each_partitions_share_of_the_kits_index(
    world, clock, settings, where, order, parent
):
    settings.PARTITIONS_AHEAD = 0
    for month in (1, 2):
        clock.set(at(2025, month, 10))
        PushDeliveryFactory(message=PushMessageFactory(app__project=world.project))
    maintain_partitions()

    # The claim's pick (config/workqueue/claiming.py), with scans other than by index
    # priced out: whether the planner can use the partial indexes at all, on tables this small.
    plan = _plan(
        f"SELECT id FROM {TABLE} WHERE {where} "  # noqa: S608
        f"ORDER BY {order} LIMIT 10 FOR UPDATE SKIP LOCKED",
        [clock.current],
    )
    used = {node["Index Name"] for node in _nodes(plan) if "Index Name" in node}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT p.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE c.relname = ANY(%s)",
            [list(used)],
        )
        assert {row[0] for row in cursor.fetchall()} == {parent}
    for month in (1, 2):
        partition = partition_name(TABLE, at(2025, month))
        assert any(name.startswith(f"{partition}_") for name in used)


def test_the_roll_up_reads_its_messages_partitions_only(world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    deliveries = []
    for month in (1, 2, 3):
        clock.set(at(2025, month, 10))
        deliveries.append(
            PushDeliveryFactory(
                message=PushMessageFactory(app__project=world.project), state="sent"
            )
        )
    maintain_partitions()
    february = deliveries[1]
    statements: list[str] = []

    def seen(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(seen):
        rolled = push_messages_roll_up(
            messages=[(february.message_id, february.message_created_at)]
        )

    assert rolled == 1
    assert PushMessage.objects.get(pk=february.message_id).status == "sent"
    [statement] = statements
    assert 'message_created_at" = ANY(' in statement
    # The same read with the messages' ids and times: February's partition only.
    plan = _plan(
        f"SELECT message_id, count(*) FROM {TABLE} WHERE message_id = ANY(%s::uuid[]) "  # noqa: S608
        "AND message_created_at = ANY(%s::timestamptz[]) GROUP BY message_id",
        [[february.message_id], [february.message_created_at]],
    )
    read = {
        node["Relation Name"]
        for node in _nodes(plan)
        if node.get("Relation Name", "").startswith(f"{TABLE}_")
    }
    assert read == {partition_name(TABLE, at(2025, 2))}


def test_the_migration_converts_the_deliveries_keeping_their_rows_and_back(world, clock):
    """Migration 0005 on a table with rows (in this test's transaction: rolled back)."""
    clock.set(at(2024, 7, 9))
    message = PushMessageFactory(app__project=world.project)
    installation = PushInstallationFactory(app=message.app, project=message.project)
    MigrationExecutor(connection).migrate([("pushproviders", "0004_index_dead_letters")])
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
        assert cursor.fetchone()[0] == "r"
        cursor.execute(
            f"INSERT INTO {TABLE} (id, message_id, installation_id, platform, position, title, "  # noqa: S608
            "body, data, state, created_at, status, attempts, next_attempt_at, last_error, "
            "error_code) VALUES (gen_random_uuid(), %s, %s, 'fcm', 0, '', 'Hi', '{}', 'queued', "
            "%s, 'accepted', 0, %s, '', '')",
            [message.id, installation.id, message.created_at, message.created_at],
        )

    MigrationExecutor(connection).migrate(latest())

    delivery = PushDelivery.objects.get(message=message)
    assert delivery.message_created_at == message.created_at
    assert _homes(message.id) == {partition_name(TABLE, at(2024, 7))}
    MigrationExecutor(connection).migrate([("pushproviders", "0004_index_dead_letters")])
    MigrationExecutor(connection).migrate(latest())
    assert PushDelivery.objects.get(message=message).id == delivery.id


def _outside_ctes(plan: object) -> list[dict]:
    """The plan's nodes but those of its common table expressions."""
    if isinstance(plan, dict):
        if str(plan.get("Subplan Name", "")).startswith("CTE"):
            return []
        return [plan, *(node for value in plan.values() for node in _outside_ctes(value))]
    if isinstance(plan, list):
        return [node for value in plan for node in _outside_ctes(value)]
    return []


def test_the_claim_marks_each_row_it_picked_in_its_own_partition(world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    for month in (1, 2, 3):
        clock.set(at(2025, month, 10))
        PushDeliveryFactory(
            message=PushMessageFactory(app__project=world.project),
            # Only February's is due.
            next_attempt_at=at(2025, 3, 10) if month == 2 else at(2030, 1, 1),
        )
    maintain_partitions()
    claims: list[tuple[str, list]] = []

    def seen(execute, sql, params, many, context):
        claims.append((sql, params))
        return execute(sql, params, many, context)

    with transaction.atomic(), connection.execute_wrapper(seen):
        _, claimed = PUSH_QUEUE.claim(limit=10)
        transaction.set_rollback(True)
    assert [item.message_created_at for item in claimed] == [at(2025, 2, 10)]

    # The claim's statement (config/workqueue/claiming.py), run again under EXPLAIN: the
    # update reads February's partition only, the one its picked row is in.
    [(sql, params)] = [(sql, params) for sql, params in claims if "FOR UPDATE SKIP" in sql][:1]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = rows_fetch(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)[0][0]
    touched = {
        node["Relation Name"]
        for node in _outside_ctes(plan)
        if node.get("Relation Name", "").startswith(f"{TABLE}_") and node.get("Actual Loops")
    }
    assert touched == {partition_name(TABLE, at(2025, 2))}


def latest() -> list[tuple[str, str]]:
    """Every app's newest migration: the models' own columns, whatever came after the
    one under test."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
