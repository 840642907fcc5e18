"""The deliveries a processed batch of events makes: event processing's batch handler
(events/hooks.py) matches each event against its project's enabled endpoints and inserts
the deliveries of the whole batch in one statement, inside the batch's transaction, so a
delivery exists exactly when its event is processed. The unique (endpoint, event) key
makes a reprocessed event create none twice."""

from typing import Any

import orjson
from django.db import transaction

from config.db.bulk import rows_insert
from config.runtime import clock
from config.runtime.clock import iso_utc
from contacts.models import Contact
from events.models import Event, EventSource
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.queue import WEBHOOK_QUEUE
from webhooks.selectors import webhook_endpoints_enabled
from webhooks.services.endpoints import EVERY_EVENT

WEBHOOK_ID_PREFIX = "msg_"


def webhook_id_of(event: Event) -> str:
    """The `webhook-id` of an event's deliveries: the same for every endpoint, attempt and
    replay (a receiver deduplicates on it)."""
    return f"{WEBHOOK_ID_PREFIX}{event.pk.hex}"


def delivery_data(event: Event, contact: Contact | None) -> dict[str, Any]:
    """The `data` member of the body. A system event's is its payload as recorded (each
    type's shape is in `GET /webhook-event-types`); a customer event's wraps its payload
    with the event's identity and the contact processing resolved it to."""
    if event.source == EventSource.SYSTEM:
        return dict(event.payload or {})
    return {
        "event_id": str(event.pk),
        "event": event.event,
        "contact_id": str(contact.pk) if contact is not None else None,
        "email": contact.email if contact is not None else event.email,
        "external_id": contact.external_id if contact is not None else event.external_id,
        "payload": event.payload,
        "occurred_at": iso_utc(event.occurred_at),
    }


def delivery_body(event: Event, contact: Contact | None) -> str:
    """The JSON body every attempt sends: `{"type", "timestamp", "data"}`."""
    body = {
        "type": event.event,
        "timestamp": iso_utc(event.occurred_at),
        "data": delivery_data(event, contact),
    }
    return orjson.dumps(body).decode()


def _wants(endpoint: WebhookEndpoint, name: str) -> bool:
    return EVERY_EVENT in endpoint.event_types or name in endpoint.event_types


class WebhooksEventBatch:
    """Event processing's batch handler: one query for the batch's endpoints, one insert
    for its deliveries, and a wake-up of the delivery workers after the commit."""

    def __init__(self) -> None:
        self.endpoints: dict[Any, list[WebhookEndpoint]] = {}
        self.rows: list[WebhookDelivery] = []

    def begin(self, *, events: list[Event]) -> None:
        self.endpoints = webhook_endpoints_enabled(
            project_ids={event.project_id for event in events}
        )

    def handle(self, *, event: Event, contact: Contact | None) -> None:
        wanting = [
            endpoint
            for endpoint in self.endpoints.get(event.project_id, ())
            if _wants(endpoint, event.event)
        ]
        if not wanting:
            return
        body = delivery_body(event, contact)
        now = clock.now()
        for endpoint in wanting:
            self.rows.append(
                WebhookDelivery(
                    project_id=event.project_id,
                    endpoint_id=endpoint.pk,
                    event_id=event.pk,
                    event_type=event.event,
                    webhook_id=webhook_id_of(event),
                    body=body,
                    next_attempt_at=now,
                    created_at=now,
                )
            )

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        if rows and rows_insert(WebhookDelivery, rows, skip_conflicts=True):
            transaction.on_commit(WEBHOOK_QUEUE.wake)
