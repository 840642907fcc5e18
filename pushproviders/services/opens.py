"""Opens of push notifications: a device reports that its notification was opened."""

import uuid

from django.db import transaction

from config.api.errors import or_404
from config.runtime import clock
from pushproviders.models import PushDelivery, PushMessage
from pushproviders.services.outcomes import push_event_emit
from pushproviders.services.sending import _not_found
from tenancy.models import Project


def push_open(
    *, project: Project, push_id: uuid.UUID, installation_id: uuid.UUID
) -> tuple[PushDelivery, bool]:
    """Records that the installation opened the message's notification; returns its
    delivery and whether this was the first report (which records `sendrealm.push.open`;
    later ones change nothing)."""
    message = or_404(
        PushMessage.objects.filter(project=project, pk=push_id).select_related("project").first(),
        "No such push message.",
    )
    delivery = PushDelivery.objects.filter(
        message=message, message_created_at=message.created_at, installation_id=installation_id
    ).first()
    if delivery is None:
        raise _not_found("installation_id", "The message was not sent to this installation.")
    delivery.message = message
    now = clock.now()
    with transaction.atomic():
        first = bool(
            PushDelivery.objects.filter(
                pk=delivery.pk,
                message_created_at=delivery.message_created_at,
                opened_at__isnull=True,
            ).update(opened_at=now)
        )
        if first:
            push_event_emit(name="push.open", message=message, delivery=delivery)
    if first:
        delivery.opened_at = now
    else:
        delivery.refresh_from_db(fields=["opened_at"])
    return delivery, first
