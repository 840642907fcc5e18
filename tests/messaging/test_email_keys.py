"""The emails' unique keys held elsewhere, so the emails table can be partitioned by time:
idempotency keys in a table of their own (`EmailKey`, migration 0012), and a campaign's
emailed contacts by their `CampaignRecipient` rows (migration 0013). Each migration
copies the keys out of the emails, and going back makes the emails' unique index again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from messaging.models import CampaignRecipient, Email, EmailKey
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_campaigns import CampaignFactory
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db

BEFORE = [("messaging", "0012_delivery_policy")]
AFTER = [("messaging", "0013_email_keys")]
RECIPIENTS = [("messaging", "0014_campaign_email_recipients")]


def _keys() -> set[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id::text, idempotency_key FROM messaging_email "
            "WHERE idempotency_key IS NOT NULL"
        )
        return set(cursor.fetchall())


def _immediate() -> None:
    with connection.cursor() as cursor:
        # The rows' deferred key checks now: a table with pending ones cannot be altered.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_the_migration_copies_the_keys_in_and_back(world, clock):
    """Migration 0012 on emails with keys (in this test's transaction: rolled back)."""
    project = world.project
    first = EmailFactory(project=project, idempotency_key="order-1")
    other = EmailFactory(project=project)
    EmailKey.objects.create(
        email=first, project=project, idempotency_key="order-1", created_at=first.created_at
    )
    _immediate()
    MigrationExecutor(connection).migrate(BEFORE)
    assert _keys() == {(str(first.id), "order-1")}

    MigrationExecutor(connection).migrate(AFTER)

    assert list(EmailKey.objects.values_list("email_id", "project_id", "idempotency_key")) == [
        (first.id, project.id, "order-1")
    ]
    assert EmailKey.objects.get().created_at == first.created_at
    # The key expired and was used again: the later email holds it.
    later = EmailFactory(project=project, idempotency_key="order-1")
    EmailKey.objects.filter(email_id=first.id).update(email_id=later.id)

    MigrationExecutor(connection).migrate(BEFORE)

    assert _keys() == {(str(later.id), "order-1")}
    assert Email.objects.filter(pk__in=[first.pk, other.pk, later.pk]).count() == 3
    MigrationExecutor(connection).migrate(AFTER)
    assert EmailKey.objects.get().email_id == later.id


def test_the_migration_gives_each_emailed_contact_its_recipient_row_and_back(world):
    """Migration 0013 on a campaign's emails (in this test's transaction: rolled back)."""
    campaign = CampaignFactory(project=world.project, sent=True)
    ada, bob, cy = (ContactFactory(project=world.project) for _ in range(3))
    _immediate()
    MigrationExecutor(connection).migrate(AFTER)
    emails = [
        EmailFactory(project=world.project, campaign=campaign, contact=contact)
        for contact in (ada, bob)
    ]
    # Skipped: its row says why.
    CampaignRecipient.objects.create(
        campaign=campaign, contact=cy, status="suppressed", reason="suppressed"
    )
    EmailFactory(project=world.project)

    MigrationExecutor(connection).migrate(RECIPIENTS)

    rows = CampaignRecipient.objects.filter(campaign=campaign)
    assert set(rows.values_list("contact_id", "status", "reason")) == {
        (ada.pk, "queued", ""),
        (bob.pk, "queued", ""),
        (cy.pk, "suppressed", "suppressed"),
    }
    assert rows.get(contact=ada).created_at == emails[0].created_at
    _immediate()
    MigrationExecutor(connection).migrate(AFTER)
    assert list(rows.values_list("contact_id", flat=True)) == [cy.pk]
    assert Email.objects.filter(campaign=campaign).count() == 2
    MigrationExecutor(connection).migrate(RECIPIENTS)
    assert rows.count() == 3
