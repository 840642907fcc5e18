"""The recipient rows a campaign's fan-out batch writes, and the suppression list read
for a batch's addresses (campaign_fanout.py): each one statement for the whole batch."""

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection

from config.db.copy import array_literal, copy_insert
from config.runtime import clock
from messaging.models import Campaign, CampaignRecipient, RecipientStatus, Suppression


def recipients_insert(
    campaign: Campaign, rows: Sequence[tuple[uuid.UUID, str, str]]
) -> set[uuid.UUID]:
    """Inserts a recipient row per (contact, status, reason) unless the contact has one
    already; returns the contacts whose row is new. One statement for the batch, its
    arrays bound as text literals (a bound list of a thousand values costs more)."""
    if not rows:
        return set()
    table = connection.ops.quote_name(CampaignRecipient._meta.db_table)
    contact_ids, statuses, reasons = zip(*rows, strict=True)
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: the model's table name.
            f"INSERT INTO {table} (campaign_id, contact_id, status, reason, created_at) "  # noqa: S608
            "SELECT %s, v.contact_id, v.status, v.reason, %s "
            "FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(contact_id, status, reason) "
            "ON CONFLICT (campaign_id, contact_id) DO NOTHING RETURNING contact_id",
            [
                campaign.pk,
                clock.now(),
                array_literal(contact_ids),
                array_literal(statuses),
                array_literal(reasons),
            ],
        )
        return {row[0] for row in cursor.fetchall()}


def suppressed_addresses(campaign: Campaign, emails: Sequence[str]) -> set[str]:
    """The addresses of `emails` on the project's suppression list. Contacts keep their
    address in the project's normal form, the form the list keeps too."""
    if not emails:
        return set()
    table = connection.ops.quote_name(Suppression._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: the model's table name.
            f"SELECT email FROM {table} WHERE project_id = %s AND email = ANY(%s::text[])",  # noqa: S608
            [campaign.project_id, array_literal(emails)],
        )
        return {row[0] for row in cursor.fetchall()}


def email_recipients_insert(
    campaign: Campaign, skip: dict[uuid.UUID, str], reach: Sequence[Any]
) -> None:
    """A recipient row per skipped contact (with its reason) and per contact about to be
    emailed (by COPY: the caller left out those that have one; a contact that got one
    meanwhile breaks the unique key, and the batch's transaction writes nothing). The
    emails table is partitioned by month, so this row, not the email, is what holds a
    campaign to one email per contact."""
    queued, suppressed = RecipientStatus.QUEUED.value, RecipientStatus.SUPPRESSED.value
    copy_insert(
        CampaignRecipient,
        ("contact", "status", "reason"),
        [
            *((pk, suppressed, reason) for pk, reason in skip.items()),
            *((contact.pk, queued, "") for contact in reach),
        ],
        constants={"campaign": campaign.pk, "created_at": clock.now()},
    )
