"""Emails partitioned by `created_at`: each lands in its month's partition and is read
there by its id (a version 7 id names the millisecond of its `created_at`; an older
version 4 id is still found), the open pixel and the delivery worker find it, none is
dropped while emails have no retention, the unique keys the emails table gave up hold
across partitions (idempotency keys, a campaign's contacts), the reference triggers work
on the partitioned table, and the migration converts a table with rows, and back."""

import datetime as dt
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from config.celery import maintain_partitions
from config.db.ids import uuid7, uuid7_span
from config.db.partitions import partition_name, partitions_list
from messaging.models import (
    Campaign,
    CampaignFanout,
    CampaignRecipient,
    Email,
    EmailDelivery,
    EmailStatus,
)
from messaging.queue import EMAIL_QUEUE
from messaging.selectors.emails import email_get
from messaging.services.campaign_fanout import campaign_fanout_run
from messaging.services.deadletter import email_deliveries_requeue
from messaging.services.delivery import emails_deliver_batch
from messaging.services.tokens import open_token
from tests.messaging.factories_campaigns import audience_with, email_template_id
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.smtp_server import smtp_server_for
from tests.messaging.test_campaigns_sending import approved, send

pytestmark = pytest.mark.django_db

UTC = dt.UTC
TABLE = "messaging_email"


def at(year: int, month: int, day: int = 1, *rest: int) -> dt.datetime:
    return dt.datetime(year, month, day, *rest, tzinfo=UTC)


def inline(**overrides):
    return {
        "from": "Sendrealm <hello@example.com>",
        "to": "ada@example.net",
        "subject": "Welcome",
        "html": "<p>Hello</p>",
        **overrides,
    }


@pytest.fixture
def smtp(settings):
    yield from smtp_server_for(settings)


def _home(email_id) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tableoid::regclass::text FROM {TABLE} WHERE id = %s",  # noqa: S608
            [email_id],
        )
        return cursor.fetchone()[0]


def _read_partitions(sql: str, params) -> set[str]:
    """The partitions of the emails table a statement reads, by its plan."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    names: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if str(node.get("Relation Name", "")).startswith(f"{TABLE}_"):
                names.add(node["Relation Name"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(plan)
    return names


def _statements(run) -> list[tuple[str, tuple]]:
    seen: list[tuple[str, tuple]] = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        run()
    return seen


def test_an_email_lives_in_its_months_partition_and_none_is_dropped(api, world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 3, 10, 12))
    response = api.post("/emails", inline(), key=world.keys["project"])
    assert response.status_code == 201, response.content
    email = Email.objects.get(pk=response.json()["data"]["id"])
    maintain_partitions()

    march = partition_name(TABLE, at(2025, 3))
    assert _home(email.id) == march
    # The id carries the millisecond of its `created_at`.
    assert email.id.version == 7
    assert uuid7_span(email.id) == (
        at(2025, 3, 10, 12),
        at(2025, 3, 10, 12) + dt.timedelta(milliseconds=1),
    )
    read = api.get(f"/emails/{email.id}", key=world.keys["project"])
    assert read.status_code == 200
    assert read.json()["data"]["id"] == str(email.id)

    # No retention policy for emails: years on, every partition stays.
    clock.set(at(2036, 1, 1))
    assert maintain_partitions()[TABLE]["dropped"] == []
    assert march in {p.name for p in partitions_list(TABLE)}
    assert Email.objects.filter(pk=email.id).exists()


def test_a_read_by_a_time_ordered_id_looks_in_one_partition(world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    emails = []
    for month in (1, 2, 3):
        clock.set(at(2025, month, 10))
        emails.append(EmailFactory(project=world.project))
    maintain_partitions()
    february = emails[1]

    statements = _statements(lambda: email_get(project=world.project, email_id=february.id))

    [(sql, params)] = statements
    assert _read_partitions(sql, params) == {partition_name(TABLE, at(2025, 2))}


def test_the_delivery_workers_batch_reads_its_emails_in_their_partitions_alone(
    world, clock, settings
):
    settings.PARTITIONS_AHEAD = 0
    queued = {}
    for month in (1, 2, 3, 4):
        clock.set(at(2025, month, 10))
        email = EmailFactory(project=world.project)
        if month in (1, 3):
            EmailDelivery.objects.create(email=email, next_attempt_at=at(2025, month, 10))
            queued[email.pk] = email
    maintain_partitions()
    assert len(partitions_list(TABLE)) >= 4
    clock.set(at(2025, 4, 20))

    claimed: list[EmailDelivery] = []
    statements = _statements(lambda: claimed.extend(EMAIL_QUEUE.claim()[1]))

    [(sql, params)] = [
        (sql, params)
        for sql, params in statements
        if sql.lstrip().startswith("SELECT") and f'FROM "{TABLE}"' in sql
    ]
    assert _read_partitions(sql, params) == {
        partition_name(TABLE, at(2025, 1)),
        partition_name(TABLE, at(2025, 3)),
    }
    assert {item.email.pk: item.email.subject for item in claimed} == {
        pk: email.subject for pk, email in queued.items()
    }
    assert all(item.email.project == world.project for item in claimed)


def test_the_delivery_worker_finds_an_email_whose_id_carries_no_time_or_another(
    world, clock, settings, smtp
):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 2, 10))
    emails = [
        EmailFactory(project=world.project, id=uuid.uuid4()),
        EmailFactory(project=world.project, id=uuid7(at=at(2024, 1, 1))),
        EmailFactory(project=world.project),
    ]
    for email in emails:
        EmailDelivery.objects.create(email=email, next_attempt_at=at(2025, 2, 10))
    maintain_partitions()

    assert emails_deliver_batch() == 3

    assert len(smtp.received) == 3
    assert set(Email.objects.values_list("status", flat=True)) == {EmailStatus.SENT}


def test_a_requeue_of_dead_lettered_emails_finds_them_in_every_partition(world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    emails = []
    for month, pk in ((1, None), (3, None), (3, uuid.uuid4()), (3, uuid7(at=at(2024, 1, 1)))):
        clock.set(at(2025, month, 10))
        email = EmailFactory(
            project=world.project, status=EmailStatus.FAILED, **({"id": pk} if pk else {})
        )
        EmailDelivery.objects.create(email=email, status="dead_lettered", attempts=5)
        emails.append(email)
    maintain_partitions()

    assert email_deliveries_requeue(ids=[email.pk for email in emails]) == 4

    assert set(Email.objects.values_list("status", flat=True)) == {EmailStatus.QUEUED}
    assert set(EmailDelivery.objects.values_list("status", flat=True)) == {"accepted"}


def test_an_email_with_an_id_from_before_the_partitions_is_still_found(api, world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 2, 10))
    old = EmailFactory(project=world.project, id=uuid.uuid4())
    # A version 7 id whose time is not its email's (made elsewhere): found too.
    odd = EmailFactory(project=world.project, id=uuid7(at=at(2024, 1, 1)))
    maintain_partitions()

    for email in (old, odd):
        read = api.get(f"/emails/{email.id}", key=world.keys["project"])
        assert read.status_code == 200, read.content
        assert read.json()["data"]["id"] == str(email.id)
    assert api.get(f"/emails/{uuid7()}", key=world.keys["project"]).status_code == 404


def test_the_pixel_and_the_worker_find_an_email_of_an_older_partition(
    api, world, clock, settings, smtp
):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 1, 31, 23, 59))
    response = api.post("/emails", inline(), key=world.keys["project"])
    email_id = response.json()["data"]["id"]
    clock.set(at(2025, 2, 1, 0, 1))
    maintain_partitions()

    assert emails_deliver_batch() == 1
    assert api.client.get(f"/t/o/{open_token(email_id)}").status_code == 200

    email = Email.objects.get(pk=email_id)
    assert _home(email_id) == partition_name(TABLE, at(2025, 1))
    assert email.status == EmailStatus.SENT
    assert email.opened_at == at(2025, 2, 1, 0, 1)
    assert len(smtp.received) == 1


def test_an_idempotency_key_is_a_duplicate_in_the_next_partition(api, world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 4, 30, 23, 59))
    headers = {"Idempotency-Key": "order-1"}
    first = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    clock.set(at(2025, 5, 1, 0, 1))
    maintain_partitions()

    again = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    other = api.post("/emails", inline(subject="Other"), key=world.keys["project"], headers=headers)

    assert again.status_code == 200
    assert again.json()["data"]["id"] == first.json()["data"]["id"]
    assert other.status_code == 409
    assert Email.objects.count() == 1


def test_a_campaign_contact_gets_one_email_across_a_partition_boundary(api, world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    clock.set(at(2025, 6, 30, 23, 59))
    audience = audience_with(world.project, 2, first_name="Ada")
    campaign_id = approved(api, world, email_template_id(api, world), audience_id=str(audience.id))
    send(api, world, campaign_id)
    batch = CampaignFanout.objects.get(campaign_id=campaign_id)
    campaign = Campaign.objects.select_related("project", "template_version").get(pk=campaign_id)

    assert campaign_fanout_run(campaign=campaign, batch=batch) == (2, 0)
    # Redone a minute later, in July's partition: nobody gets a second email.
    clock.set(at(2025, 7, 1, 0, 1))
    maintain_partitions()
    assert campaign_fanout_run(campaign=campaign, batch=batch) == (0, 0)
    emails = Email.objects.filter(campaign_id=campaign_id)
    assert emails.count() == 2
    assert {_home(email.id) for email in emails} == {partition_name(TABLE, at(2025, 6))}
    contact_id = emails[0].contact_id
    with pytest.raises(IntegrityError), transaction.atomic():
        CampaignRecipient.objects.create(
            campaign_id=campaign_id, contact_id=contact_id, status="queued"
        )


def test_the_reference_triggers_check_rows_of_the_partitioned_table(world, clock, settings):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 8, 10))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal",
            [TABLE],
        )
        assert {row[0] for row in cursor.fetchall()} == {
            "messaging_email_references_inserted",
            "messaging_email_references_updated",
        }
    with pytest.raises(IntegrityError), transaction.atomic():
        EmailFactory(project=world.project, template_id=uuid.uuid4())
    email = EmailFactory(project=world.project)
    with pytest.raises(IntegrityError), transaction.atomic():
        Email.objects.filter(pk=email.pk).update(topic_id=uuid.uuid4())


def test_the_migration_converts_the_emails_keeping_their_rows_and_back(world, clock):
    """Migration 0014 on a table with rows (in this test's transaction: rolled back)."""
    clock.set(at(2024, 7, 9))
    email = EmailFactory(project=world.project, id=uuid.uuid4())
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    MigrationExecutor(connection).migrate([("messaging", "0014_campaign_email_recipients")])
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
        assert cursor.fetchone()[0] == "r"
    # The reference checks work on the plain table again.
    with pytest.raises(IntegrityError), transaction.atomic():
        EmailFactory(project=world.project, campaign_id=uuid.uuid4())

    MigrationExecutor(connection).migrate(latest())

    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [TABLE])
        assert cursor.fetchone()[0] == "p"
    assert _home(email.id) == partition_name(TABLE, at(2024, 7))
    assert Email.objects.get(pk=email.id).subject == email.subject
    MigrationExecutor(connection).migrate([("messaging", "0014_campaign_email_recipients")])
    MigrationExecutor(connection).migrate(latest())
    assert Email.objects.get(pk=email.id).created_at == at(2024, 7, 9)


def latest() -> list[tuple[str, str]]:
    """Every app's newest migration: the models' own columns, whatever came after the
    one under test."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
