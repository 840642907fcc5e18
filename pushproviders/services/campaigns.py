"""What push campaigns (a messaging family's feature) need of push sending, registered as
messaging's hooks in apps.py: resolving the campaign's app, making the messages of a
fan-out batch, and reading a campaign's progress.

A batch makes one push message per recipient contact (rendered for it) with one delivery
per active installation of the app, all in bulk in the caller's transaction; deliveries
are queued for the workers after commit, like any send."""

import datetime as dt
import uuid
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q

from config.runtime import clock
from config.workqueue.models import WorkStatus
from contacts.models import Contact
from messaging.hooks import PushCampaignProgress
from messaging.models import TemplateVersion
from pushproviders.models import (
    PushApp,
    PushDelivery,
    PushDeliveryState,
    PushInstallation,
    PushMessage,
    PushMessageStatus,
)
from pushproviders.queue import PUSH_QUEUE
from pushproviders.selectors import push_app_get
from pushproviders.services.outcomes import push_event_emit
from pushproviders.services.sending import _Renderer, _targets
from tenancy.models import Project


def push_campaign_app_resolve(*, project: Project, app_ref: str) -> uuid.UUID | None:
    """The id of the project's app named by its id or public id; None when unknown."""
    app = push_app_get(project=project, app_ref=app_ref)
    return app.pk if app is not None else None


def push_campaign_batch_send(
    *,
    project: Project,
    campaign_id: uuid.UUID,
    app_id: uuid.UUID,
    version: TemplateVersion,
    contacts: Sequence[Contact],
    not_before: Mapping[uuid.UUID, dt.datetime] | None = None,
) -> set[uuid.UUID]:
    """One message per contact that has active installations of the app, rendered for
    it; returns the ids of those contacts. An installation whose provider cannot send
    gets a `failed` delivery at once, as in any send. A contact of `not_before` (in its
    quiet hours) has its deliveries due then: the push queue's claim waits for it."""
    app = PushApp.objects.filter(project=project, pk=app_id).first()
    if app is None or not contacts:
        return set()
    by_id = {contact.pk: contact for contact in contacts}
    installations = list(
        PushInstallation.objects.filter(app=app, contact_id__in=list(by_id), active=True).order_by(
            "contact_id", "created_at", "id"
        )
    )
    for installation in installations:
        # Known already: rendering and the provider check need no query per device.
        installation.app = app
        installation.contact = by_id[installation.contact_id]
    renderer = _Renderer(project=project, version=version, data=None, event=None, extra=None)
    targets_of = defaultdict(list)
    for target in _targets(installations, renderer):
        targets_of[target.installation.contact_id].append(target)
    now = clock.now()
    messages: list[PushMessage] = []
    deliveries: list[PushDelivery] = []
    queued = False
    for contact_id, targets in targets_of.items():
        first = targets[0].content
        sendable = any(target.problem is None for target in targets)
        queued = queued or sendable
        message = PushMessage(
            id=uuid.uuid4(),
            project=project,
            app=app,
            template_id=version.template_id,
            template_version=version,
            contact_id=contact_id,
            campaign_id=campaign_id,
            title=first.title,
            body=first.body,
            data=first.data,
            status=PushMessageStatus.QUEUED if sendable else PushMessageStatus.FAILED,
            created_at=now,
        )
        messages.append(message)
        for position, target in enumerate(targets):
            delivery = PushDelivery(
                message=message,
                message_created_at=message.created_at,
                installation=target.installation,
                contact_id=contact_id,
                platform=target.installation.platform,
                position=position,
                title=target.content.title or "",
                body=target.content.body or "",
                data=target.content.data,
                created_at=now,
            )
            if target.problem is None:
                delivery.next_attempt_at = (not_before or {}).get(contact_id, now)
            else:
                delivery.state = PushDeliveryState.FAILED
                delivery.error = target.problem.message
                delivery.status = WorkStatus.DEAD_LETTERED
                delivery.last_error = target.problem.message
                delivery.error_code = target.problem.code
            deliveries.append(delivery)
    PushMessage.objects.bulk_create(messages)
    PushDelivery.objects.bulk_create(deliveries)
    for delivery in deliveries:
        if delivery.state == PushDeliveryState.FAILED:
            push_event_emit(
                name="push.failure",
                message=delivery.message,
                delivery=delivery,
                status=delivery.state,
                error=delivery.error,
            )
    if queued:
        transaction.on_commit(PUSH_QUEUE.wake)
    return set(targets_of)


def push_campaign_progress_read(
    *, campaign_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, PushCampaignProgress]:
    """Each campaign's messages by status (partially sent counts as sent) and how many
    were opened on a device; one grouped query."""
    opened = PushDelivery.objects.filter(
        message=OuterRef("pk"),
        message_created_at=OuterRef("created_at"),
        opened_at__isnull=False,
    )
    rows = (
        PushMessage.objects.filter(campaign_id__in=list(campaign_ids))
        .values("campaign_id")
        .annotate(
            queued=Count("pk", filter=Q(status=PushMessageStatus.QUEUED)),
            sent=Count(
                "pk",
                filter=Q(status__in=[PushMessageStatus.SENT, PushMessageStatus.PARTIALLY_SENT]),
            ),
            failed=Count("pk", filter=Q(status=PushMessageStatus.FAILED)),
            opened=Count("pk", filter=Q(Exists(opened))),
        )
        .order_by()
    )
    return {
        row["campaign_id"]: PushCampaignProgress(
            queued=row["queued"], sent=row["sent"], failed=row["failed"], opened=row["opened"]
        )
        for row in rows
    }
