"""The receiver of django-anymail's `tracking` signal: turns each normalised event into a
call of the service that records it (messaging.services.esp_events)."""

from collections.abc import Callable
from typing import Any

from anymail.signals import AnymailTrackingEvent, EventType

from messaging.services.esp_events import email_esp_event_record


def _field(event: Any, *path: str) -> Any:
    for name in path:
        event = event.get(name) if isinstance(event, dict) else None
    return event


# Soft bounces (a full mailbox, a greylisting server) that anymail reports as `bounced`,
# by ESP (anymail's `esp_name`) and its raw event: the ESP tries again or reports a hard
# bounce later, so they suppress nothing. Other ESPs already report them as `deferred`.
SOFT_BOUNCES: dict[str, Callable[[Any], bool]] = {
    "Postmark": lambda raw: _field(raw, "Type") == "SoftBounce",
    "SendGrid": lambda raw: _field(raw, "type") == "blocked",
    "Brevo": lambda raw: _field(raw, "event") == "soft_bounce",
    "SendinBlue": lambda raw: _field(raw, "event") == "soft_bounce",
    "Mailjet": lambda raw: not _field(raw, "hard_bounce"),
    "MailerSend": lambda raw: _field(raw, "data", "type") == "soft_bounced",
    "Amazon SES": lambda raw: _field(raw, "bounce", "bounceType") == "Transient",
}


def event_type_of(event: AnymailTrackingEvent, esp_name: str) -> str:
    """anymail's event type, with the soft bounces it calls `bounced` called `deferred`."""
    if event.event_type == EventType.BOUNCED:
        is_soft = SOFT_BOUNCES.get(esp_name)
        if is_soft is not None and is_soft(event.esp_event):
            return str(EventType.DEFERRED)
    return str(event.event_type)


def esp_tracking_received(*, event: AnymailTrackingEvent, esp_name: str, **kwargs: Any) -> None:
    """Records one ESP tracking event. Raises only on failures worth the ESP's retry (the
    database is down): unknown messages and odd addresses are logged and skipped."""
    email_esp_event_record(
        esp=esp_name,
        event_type=event_type_of(event, esp_name),
        message_id=str(event.message_id) if event.message_id else None,
        recipient=event.recipient,
        at=event.timestamp,
        reject_reason=event.reject_reason,
        description=event.description or event.mta_response,
        click_url=event.click_url,
    )
