"""Campaign fan-out on the work-queue kit.

Starting a send plans it: the campaign's contacts, in contact-id order, are cut into
ranges of CAMPAIGN_FANOUT_BATCH_SIZE (one index scan finds the boundaries), one
`CampaignFanout` row per range. Workers claim the rows like any queue of the kit and
work each in one transaction:

1. The campaign row is read `FOR SHARE`: a batch of a campaign no longer `sending`
   (canceled) makes nothing, and a cancel waits for the batches in flight to commit, so
   no batch starts messages after the cancel is seen.
2. The range's contacts are loaded with one query; unsubscribed ones (topic campaigns),
   suppressed addresses and contacts without an address (email) are skipped.
3. A batch runs at most once at a time (the kit locks its row and checks the claim in
   the batch's transaction) and reads what an earlier run of it committed: the range's
   contacts this campaign already emailed or skipped (each has a `CampaignRecipient`
   row). Only the others go on, so a batch redone after a worker died (its lease ran
   out) sends nobody a second message and counts nobody twice; the recipients' unique
   (campaign, contact) key stands behind the read (not the emails': their table is
   partitioned by time, where a unique key would be unique per month only).
4. Every contact gets a recipient row, written with its email (in one COPY before the
   emails), or saying why it was skipped. Emails are rendered from the version
   frozen at approval (`EmailRenderer`: what each contact alone would get, for less
   work per contact) and stored with their delivery jobs by the bulk email writer
   (messaging/services/email_store.py: COPY; the email queue is woken after commit).
   Push messages are made by the push family through messaging/hooks.py; every
   contact of a push campaign gets a recipient row first (INSERT ... ON CONFLICT DO
   NOTHING RETURNING: only the new ones go on).

The batches of a campaign run in parallel on any number of workers. Contacts added to
the audience (or topic) before their range's batch runs are included. A batch whose
retries ran out keeps its campaign `sending` until staff requeue it.
"""

import datetime as dt
import json
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

from django.db import connection, transaction

from config.db.copy import RawJson
from config.db.ids import uuid7
from config.runtime import clock
from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from config.workqueue.queue import WorkQueue
from config.workqueue.work import BatchWork, PerItem
from contacts.models import Contact
from messaging import conf
from messaging.errors import TemplateRenderFailed
from messaging.hooks import push_campaign_sender
from messaging.models import (
    Campaign,
    CampaignFanout,
    CampaignRecipient,
    CampaignStatus,
    Channel,
    EmailStatus,
    RecipientStatus,
    SkipReason,
)
from messaging.selectors.campaigns import campaign_candidates
from messaging.services.campaign_progress import campaigns_finish
from messaging.services.campaign_recipients import (
    email_recipients_insert,
    recipients_insert,
    suppressed_addresses,
)
from messaging.services.campaigns import Actor, campaign_history_record
from messaging.services.email_store import emails_insert
from messaging.services.emails import bare_address
from messaging.services.policy import NO_POLICY, policy_of
from messaging.services.policy_batch import BatchHold
from messaging.services.rendering import contact_variables
from messaging.services.rendering_batch import EmailRenderer

logger = logging.getLogger(__name__)

CAMPAIGN_FANOUT_QUEUE: WorkQueue[CampaignFanout] = WorkQueue(
    model=CampaignFanout,
    task="messaging.fan_out_campaigns",
    wake_key="messaging:campaigns:wake",
    retry_policy=conf.fanout_retry_policy,
    batch_size=conf.fanout_claim_batch_size,
    lease_seconds=conf.fanout_lease_seconds,
    order_by=("next_attempt_at", "position"),
    prefetch_related=(
        "campaign",
        "campaign__project",
        "campaign__template_version",
        "campaign__template_version__template",
        "campaign__audience",
        "campaign__topic__project",
    ),
)


# --- planning ---------------------------------------------------------------------------------


def _boundaries(campaign: Campaign, size: int) -> list[uuid.UUID]:
    """Every `size`-th contact id of the campaign's contacts, in id order (one scan)."""
    candidates = campaign_candidates(campaign)
    if candidates is None:
        return []
    sql, params = candidates.order_by().values("id").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: the ORM's own SQL.
            "SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n "  # noqa: S608
            f"FROM ({sql}) AS candidates) AS numbered WHERE n %% %s = 0 ORDER BY id",
            [*params, size],
        )
        return [row[0] for row in cursor.fetchall()]


def campaign_fanout_plan(*, campaign: Campaign) -> int:
    """Cuts the campaign's contacts into batches, stores one fan-out row per batch (due
    now) and wakes the workers after commit; returns the number of batches. Runs in the
    transaction that makes the campaign `sending`."""
    size = conf.fanout_batch_size()
    bounds: list[uuid.UUID | None] = list(_boundaries(campaign, size))
    starts: list[uuid.UUID | None] = [None, *bounds]
    ends: list[uuid.UUID | None] = [*bounds, None]
    now = clock.now()
    CampaignFanout.objects.bulk_create(
        [
            CampaignFanout(
                campaign=campaign,
                position=position,
                after_contact_id=after,
                upto_contact_id=upto,
                next_attempt_at=now,
                created_at=now,
            )
            for position, (after, upto) in enumerate(zip(starts, ends, strict=True))
        ]
    )
    transaction.on_commit(CAMPAIGN_FANOUT_QUEUE.wake)
    return len(starts)


# --- one batch ----------------------------------------------------------------------------------


def _status_shared(campaign_id: uuid.UUID) -> str | None:
    """The campaign's status, its row held FOR SHARE until the batch commits: a cancel
    (an UPDATE) waits for the batch, and the batches of one campaign do not wait for
    each other."""
    table = connection.ops.quote_name(Campaign._meta.db_table)
    with connection.cursor() as cursor:
        # S608: the model's table name.
        cursor.execute(f"SELECT status FROM {table} WHERE id = %s FOR SHARE", [campaign_id])  # noqa: S608
        row = cursor.fetchone()
    return row[0] if row else None


class Candidate(NamedTuple):
    """What a batch needs of a contact of an email campaign (read without model instances)."""

    pk: uuid.UUID
    email: str | None
    external_id: str | None
    fields: Any
    topic_subscribed: bool


# `topic_subscribed` is the selector's annotation.
CANDIDATE_COLUMNS = ("id", "email", "external_id", "fields", "topic_subscribed")


def _contacts_in(campaign: Campaign, batch: CampaignFanout) -> Sequence[Candidate | Contact]:
    """The batch's contacts in id order: plain rows for email, contacts for push (the push
    family renders and stores with them)."""
    candidates = campaign_candidates(
        campaign, after=batch.after_contact_id, upto=batch.upto_contact_id
    )
    if candidates is None:
        return []
    candidates = candidates.order_by("id")
    if campaign.channel == Channel.PUSH:
        return list(candidates.only("id", "email", "external_id", "fields"))
    return [Candidate._make(row) for row in candidates.values_list(*CANDIDATE_COLUMNS)]


def _range_condition(column: str, batch: CampaignFanout) -> tuple[str, list[Any]]:
    """SQL that keeps `column` (a contact id) within the batch's range, and its params."""
    sql, params = "", []
    if batch.after_contact_id is not None:
        sql += f" AND {column} > %s"
        params.append(batch.after_contact_id)
    if batch.upto_contact_id is not None:
        sql += f" AND {column} <= %s"
        params.append(batch.upto_contact_id)
    return sql, params


def _handled(campaign: Campaign, batch: CampaignFanout) -> set[uuid.UUID]:
    """The contacts of the batch's range that an earlier run of the batch emailed or
    skipped: one scan of the recipients' (campaign, contact) key, empty on a first run."""
    recipients = connection.ops.quote_name(CampaignRecipient._meta.db_table)
    within, bounds = _range_condition("contact_id", batch)
    with connection.cursor() as cursor:
        cursor.execute(
            # S608: names from the models.
            f"SELECT contact_id FROM {recipients} WHERE campaign_id = %s{within}",  # noqa: S608
            [campaign.pk, *bounds],
        )
        return {row[0] for row in cursor.fetchall()}


# Per email; the columns every email of a batch shares are `emails_insert` constants.
EMAIL_COLUMNS = (
    "id",
    "to",
    "recipients",
    "subject",
    "html",
    "text",
    "contact",
    "status",
    "message_id",
    "last_error",
)
NO_TAGS, NO_DATA = RawJson("[]"), RawJson("{}")


def _emails_create(
    campaign: Campaign,
    contacts: Sequence[Candidate | Contact],
    *,
    held: Mapping[uuid.UUID, dt.datetime] | None = None,
) -> list[uuid.UUID]:
    """One email per contact, rendered from the frozen version, stored with its delivery
    job (`emails_insert`; due at `held[contact]` for a contact in quiet hours); a contact
    the template cannot be rendered for gets a `failed` email with the reason (nothing is
    sent to it). Returns the contacts whose email was queued."""
    if not contacts:
        return []
    version = campaign.template_version
    assert version is not None
    domain = bare_address(campaign.sender).rpartition("@")[2] or "sendrealm.local"
    render = EmailRenderer(version, project=campaign.project).render
    queued_status, failed_status = EmailStatus.QUEUED.value, EmailStatus.FAILED.value
    emails: list[tuple[Any, ...]] = []
    # Ids go as text (COPY sends text), each made once: the email's serves its row and
    # its delivery job, the contact's its variables and the row.
    queued: list[str] = []
    due: dict[str, dt.datetime] = {}
    reached: list[uuid.UUID] = []
    why: str | None
    # One instant for the batch: each id carries it, as `created_at` (reads by id find
    # the email's partition).
    now = clock.now()
    for contact in contacts:
        email_id = uuid7(at=now)
        email_key = str(email_id)
        # `to` and `recipients` are the same one address.
        address = RawJson(json.dumps([contact.email or ""]))
        variables = contact_variables(
            contact_id=contact.pk,
            email=contact.email,
            external_id=contact.external_id,
            fields=dict(contact.fields or {}),
        )
        contact_key = variables["id"]
        try:
            subject, html, text = render(variables)
        except TemplateRenderFailed as error:
            status, subject, html, text = failed_status, "", None, None
            why = f"The template could not be rendered for this contact: {error.details}"
        else:
            status, why = queued_status, None
            queued.append(email_key)
            reached.append(contact.pk)
            if held and contact.pk in held:
                due[email_key] = held[contact.pk]
        emails.append(
            (
                email_key,
                address,
                address,
                subject or "",
                html,
                text,
                contact_key,
                status,
                # Unique as the email's id is, and cheaper than make_msgid's clock and
                # random bits (one per email of a fan-out).
                f"<{email_id.hex}@{domain}>",
                why,
            )
        )
    emails_insert(
        columns=EMAIL_COLUMNS,
        rows=emails,
        constants={
            "project": campaign.project_id,
            "from_email": campaign.sender,
            "tags": NO_TAGS,
            "data": NO_DATA,
            "template": version.template_id,
            "template_version": version.pk,
            "topic": campaign.topic_id,
            "campaign": campaign.pk,
            "request_fingerprint": "",
            "created_at": now,
        },
        queued=queued,
        now=now,
        due=due,
    )
    return reached


def _push_messages_create(
    campaign: Campaign,
    contacts: Sequence[Candidate | Contact],
    *,
    held: Mapping[uuid.UUID, dt.datetime] | None = None,
) -> set[uuid.UUID]:
    """Push messages through the push family; returns the contacts without a device."""
    if not contacts:
        return set()
    sender = push_campaign_sender()
    if sender is None:
        raise WorkError("Push sending is not installed.", code="push_unavailable")
    assert campaign.template_version is not None
    assert campaign.app_id is not None
    reached = sender(
        project=campaign.project,
        campaign_id=campaign.pk,
        app_id=campaign.app_id,
        version=campaign.template_version,
        # Contacts themselves: `_contacts_in` reads them so for push.
        contacts=cast(Sequence[Contact], contacts),
        not_before=held or {},
    )
    return {contact.pk for contact in contacts} - reached


def _held(campaign: Campaign, channel: str) -> BatchHold:
    """The delivery policy over a batch's messages; a transactional campaign has none."""
    policy = NO_POLICY if campaign.transactional else policy_of(campaign.project)
    return BatchHold(policy=policy, project_id=campaign.project_id, channel=channel)


def campaign_fanout_run(*, campaign: Campaign, batch: CampaignFanout) -> tuple[int, int]:
    """Works one batch in the caller's transaction; returns the messages it made and the
    contacts it skipped (both only for contacts it was the first to reach)."""
    if _status_shared(campaign.pk) != CampaignStatus.SENDING:
        return 0, 0
    contacts = _contacts_in(campaign, batch)
    email = campaign.channel == Channel.EMAIL
    if email and (handled := _handled(campaign, batch)):
        contacts = [contact for contact in contacts if contact.pk not in handled]
    skip: dict[uuid.UUID, str] = {}
    for contact in contacts:
        if not getattr(contact, "topic_subscribed", True):
            skip[contact.pk] = SkipReason.UNSUBSCRIBED
        elif email and not contact.email:
            skip[contact.pk] = SkipReason.NO_EMAIL
    if email:
        listed = suppressed_addresses(
            campaign, [c.email for c in contacts if c.pk not in skip and c.email]
        )
        for contact in contacts:
            if contact.pk not in skip and contact.email in listed:
                skip[contact.pk] = SkipReason.SUPPRESSED
        held = _held(campaign, Channel.EMAIL)
        capped = held.apply([(c.pk, c.fields) for c in contacts if c.pk not in skip])
        skip.update(dict.fromkeys(capped, SkipReason.CAPPED))
        reach = [contact for contact in contacts if contact.pk not in skip]
        email_recipients_insert(campaign, skip, reach)
        reached = _emails_create(campaign, reach, held=held.deferred())
        held.count(reached)
        return len(reached), len(skip)
    new = recipients_insert(
        campaign,
        [
            (
                contact.pk,
                RecipientStatus.SUPPRESSED if contact.pk in skip else RecipientStatus.QUEUED,
                skip.get(contact.pk, ""),
            )
            for contact in contacts
        ],
    )
    reach = [contact for contact in contacts if contact.pk in new and contact.pk not in skip]
    skipped = sum(1 for pk in skip if pk in new)
    held = _held(campaign, Channel.PUSH)
    capped = held.apply([(contact.pk, contact.fields) for contact in reach])
    reach = [contact for contact in reach if contact.pk not in capped]
    unreached = _push_messages_create(campaign, reach, held=held.deferred())
    held.count(contact.pk for contact in reach if contact.pk not in unreached)
    for reason, ids in ((SkipReason.NO_INSTALLATION, unreached), (SkipReason.CAPPED, capped)):
        if ids:
            CampaignRecipient.objects.filter(campaign=campaign, contact_id__in=ids).update(
                status=RecipientStatus.SUPPRESSED, reason=reason
            )
    return len(reach) - len(unreached), skipped + len(unreached) + len(capped)


class CampaignFanoutWork(BatchWork[CampaignFanout]):
    """Works claimed fan-out rows inside the kit's transaction."""

    def __init__(self) -> None:
        self.made: dict[Any, tuple[int, int]] = {}

    def run(self, item: CampaignFanout) -> None:
        self.made[item.pk] = campaign_fanout_run(campaign=item.campaign, batch=item)

    def done_values(self, items: list[CampaignFanout]) -> dict[str, Any]:
        return {
            "messages": PerItem({item.pk: self.made[item.pk][0] for item in items}),
            "skipped": PerItem({item.pk: self.made[item.pk][1] for item in items}),
        }


def campaign_fanout_batch() -> int:
    """Claims fan-out rows (that commits), works them in one transaction, then checks
    whether their campaigns finished; returns how many rows it claimed."""
    token, items = CAMPAIGN_FANOUT_QUEUE.claim()
    if not items:
        return 0
    CAMPAIGN_FANOUT_QUEUE.run(token=token, items=items, work=CampaignFanoutWork())
    campaigns_finish(campaign_ids={item.campaign_id for item in items})
    return len(items)


def campaign_fanout_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Works due fan-out batches until none are left or the budget is spent."""
    return CAMPAIGN_FANOUT_QUEUE.drain(campaign_fanout_batch, budget_seconds=budget_seconds)


def campaign_fanouts_requeue(*, ids: Iterable[Any], user_id: int) -> int:
    """Gives dead-lettered fan-out batches of campaigns still `sending` a fresh set of
    attempts, due now (the workers are woken after commit), and records the resumption
    in each campaign's history; returns how many. A redone batch reaches only contacts
    without a recipient row, so nobody gets a second message. Other batches, and those
    of campaigns no longer sending, are left alone."""
    with transaction.atomic():
        # The batches locked: of two staff requeueing at once, the later finds them no
        # longer dead-lettered and records nothing. Not the campaign: a cancel may run.
        dead = list(
            CampaignFanout.objects.select_related("campaign")
            .select_for_update(of=("self",))
            .filter(
                pk__in=list(ids),
                status=WorkStatus.DEAD_LETTERED,
                campaign__status=CampaignStatus.SENDING,
            )
        )
        if not dead:
            return 0
        count = CAMPAIGN_FANOUT_QUEUE.requeue(ids=[batch.pk for batch in dead])
        positions: dict[uuid.UUID, list[int]] = {}
        campaigns = {}
        for batch in dead:
            positions.setdefault(batch.campaign_id, []).append(batch.position)
            campaigns[batch.campaign_id] = batch.campaign
        for campaign_id, requeued in positions.items():
            numbers = ", ".join(str(position) for position in sorted(requeued))
            campaign_history_record(
                campaign=campaigns[campaign_id],
                actor=Actor(user_id=user_id),
                message=f"Fan-out resumed: dead-lettered batch(es) {numbers} requeued",
            )
        return count
