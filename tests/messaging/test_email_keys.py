"""The emails' idempotency keys in a table of their own (`EmailKey`, migration 0012): the
migration copies every email's key in, and going back makes the emails' unique index
again, clearing the key of an email whose key expired and was used again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from messaging.models import Email, EmailKey
from tests.messaging.factories_emails import EmailFactory

pytestmark = pytest.mark.django_db

BEFORE = [("messaging", "0011_delivery_days")]
AFTER = [("messaging", "0012_email_keys")]


def _keys() -> set[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id::text, idempotency_key FROM messaging_email "
            "WHERE idempotency_key IS NOT NULL"
        )
        return set(cursor.fetchall())


def test_the_migration_copies_the_keys_in_and_back(world, clock):
    """Migration 0012 on emails with keys (in this test's transaction: rolled back)."""
    project = world.project
    first = EmailFactory(project=project, idempotency_key="order-1")
    other = EmailFactory(project=project)
    EmailKey.objects.create(
        email=first, project=project, idempotency_key="order-1", created_at=first.created_at
    )
    with connection.cursor() as cursor:
        # The rows' deferred key checks now: a table with pending ones cannot be altered.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
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
