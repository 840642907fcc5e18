"""The local capture: a Django email backend that keeps each message in the database
(`CapturedMessage`, shown in the admin) instead of sending it, like Mailpit. It is the
transport when `EMAIL_URL` is empty (`make run`, tests that do not start an SMTP server)."""

import uuid
from collections.abc import Sequence
from email import message_from_bytes, policy
from email.utils import parseaddr
from typing import Any

from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend

from messaging.models.emails import CapturedMessage, Email


def _email_id(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value).strip()) if value else None
    except ValueError:
        return None


class CaptureBackend(BaseEmailBackend):
    """Stores every message with its envelope and headers; sends nothing."""

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        count = 0
        for message in email_messages:
            recipients = message.recipients()
            if not recipients:
                continue
            raw = message.message().as_bytes(linesep="\r\n")
            parsed: Any = message_from_bytes(raw, policy=policy.default)
            email_id = _email_id(parsed.get("X-Email-Id"))
            if email_id is not None and not Email.objects.filter(pk=email_id).exists():
                email_id = None
            CapturedMessage.objects.create(
                email_id=email_id,
                envelope_from=parseaddr(message.from_email or "")[1],
                envelope_to=[parseaddr(address)[1] for address in recipients],
                subject=str(parsed.get("Subject", "")),
                message_id=str(parsed.get("Message-ID", "")),
                headers=[[name, str(value)] for name, value in parsed.items()],
                raw=raw,
            )
            count += 1
        return count
