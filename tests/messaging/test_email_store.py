"""The bulk email writer that every bulk sender uses (a campaign's fan-out, EmailBatch):
emails in one statement, delivery jobs for the queued ones in another, delivery woken
after commit, nothing stored when a row is refused."""

import datetime as dt
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from config.db.copy import RawJson
from config.workqueue.models import WorkStatus
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.queue import EMAIL_QUEUE
from messaging.services.email_store import emails_insert, emails_insert_instances
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
COLUMNS = ("id", "to", "recipients", "subject", "status", "message_id")


def shared(project) -> dict:
    return {
        "project": project.pk,
        "from_email": "Shop <shop@example.com>",
        "tags": RawJson("[]"),
        "data": RawJson("{}"),
        "request_fingerprint": "",
        "created_at": NOW,
    }


def row(status: str = EmailStatus.QUEUED) -> tuple:
    email_id = uuid.uuid4()
    address = [f"{email_id.hex[:8]}@example.net"]
    return (email_id, address, address, "Hi\tthere\n", status, f"<{email_id.hex}@example.com>")


def test_emails_and_the_jobs_of_the_queued_ones_are_stored_together(
    world, django_capture_on_commit_callbacks
):
    rows = [row(), row(), row(EmailStatus.SUPPRESSED)]

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        emails_insert(
            columns=COLUMNS,
            rows=rows,
            constants=shared(world.project),
            queued=[rows[0][0], rows[1][0]],
            now=NOW,
        )

    stored = {email.pk: email for email in Email.objects.filter(project=world.project)}
    assert set(stored) == {r[0] for r in rows}
    assert stored[rows[0][0]].subject == "Hi\tthere\n"
    assert stored[rows[0][0]].to == rows[0][1]
    assert stored[rows[0][0]].created_at == NOW
    jobs = EmailDelivery.objects.filter(email__project=world.project)
    assert {job.email_id for job in jobs} == {rows[0][0], rows[1][0]}
    assert {(job.status, job.attempts, job.next_attempt_at) for job in jobs} == {
        (WorkStatus.ACCEPTED, 0, NOW)
    }
    assert callbacks == [EMAIL_QUEUE.wake]


def test_a_write_costs_two_statements_however_many_emails(world):
    for count in (2, 40):
        rows = [row() for _ in range(count)]
        with CaptureQueriesContext(connection) as queries:
            emails_insert(
                columns=COLUMNS,
                rows=rows,
                constants=shared(world.project),
                queued=[r[0] for r in rows],
                now=NOW,
            )
        statements = [q["sql"].split(" (")[0] for q in queries.captured_queries]
        assert statements == ['COPY "messaging_email"', 'COPY "messaging_emaildelivery"']


def test_nothing_queued_wakes_nobody(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        emails_insert(
            columns=COLUMNS,
            rows=[row(EmailStatus.SUPPRESSED)],
            constants=shared(world.project),
            queued=[],
            now=NOW,
        )

    assert callbacks == []
    assert not EmailDelivery.objects.exists()


def test_a_refused_row_stores_nothing(world):
    # The emails' primary key is (id, created_at) (the table is partitioned by time).
    taken = EmailFactory(project=world.project, created_at=NOW)
    rows = [row(), (taken.pk, *row()[1:])]

    with pytest.raises(IntegrityError), transaction.atomic():
        emails_insert(
            columns=COLUMNS,
            rows=rows,
            constants=shared(world.project),
            queued=[r[0] for r in rows],
            now=NOW,
        )

    assert list(Email.objects.values_list("pk", flat=True)) == [taken.pk]
    assert not EmailDelivery.objects.exists()


def test_instances_are_stored_as_they_are_and_marked_stored(world):
    emails = [
        EmailFactory.build(project=world.project, created_at=NOW, data={"at": NOW}),
        EmailFactory.build(project=world.project, created_at=NOW, status=EmailStatus.SUPPRESSED),
    ]

    emails_insert_instances(emails, queued=emails[:1], now=NOW)

    assert all(not email._state.adding for email in emails)
    stored = Email.objects.get(pk=emails[0].pk)
    assert (stored.to, stored.message_id, stored.data) == (
        emails[0].to,
        emails[0].message_id,
        {"at": NOW.isoformat().replace("+00:00", "Z")},
    )
    assert list(EmailDelivery.objects.values_list("email_id", flat=True)) == [emails[0].pk]
    emails[1].subject = "Changed"
    emails[1].save(update_fields=["subject"])
