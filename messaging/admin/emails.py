"""Staff console for emails (with their status timeline and delivery attempts), the email
dead-letter queue (with requeue) and the local capture's messages, previewed as a mail
client would show them."""

from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyModelAdmin
from config.workqueue.admin import DeadLetterAdmin, ErrorCodeFilter
from messaging.models import CapturedMessage, DeadLetteredEmailDelivery, Email, EmailDelivery
from messaging.services.deadletter import email_deliveries_requeue

_TIMELINE = (
    ("created", "created_at"),
    ("sent", "sent_at"),
    ("delivered", "delivered_at"),
    ("opened", "opened_at"),
    ("clicked", "clicked_at"),
    ("bounced", "bounced_at"),
    ("complained", "complained_at"),
)


@admin.register(Email)
class EmailAdmin(ReadOnlyModelAdmin):
    """Read-only: emails are sent through the API; their state comes from delivery and
    tracking."""

    list_display = [
        "subject",
        "status",
        "from_email",
        "project",
        "created_at",
        "sent_at",
        "opened_at",
        "clicked_at",
    ]
    list_filter = ["status"]
    list_select_related = ["project"]
    search_fields = ["=id", "=message_id"]
    search_help_text = "Email id or Message-ID (exact)."
    raw_id_fields = ["project", "template", "template_version", "contact", "topic"]
    readonly_fields = (
        "id",
        "project",
        "status",
        "timeline",
        "delivery_state",
        "from_email",
        "to",
        "recipients",
        "reply_to",
        "subject",
        "tags",
        "template",
        "template_version",
        "contact",
        "topic",
        "message_id",
        "provider_message_id",
        "last_error",
        "idempotency_key",
        "html",
        "text",
        "data",
    )
    fields = readonly_fields

    @admin.display(description="timeline")
    def timeline(self, obj: Email) -> SafeString:
        steps = [(label, getattr(obj, name)) for label, name in _TIMELINE if getattr(obj, name)]
        return format_html(
            "<ol>{}</ol>",
            format_html_join("", "<li>{}: {}</li>", ((label, when) for label, when in steps)),
        )

    @admin.display(description="delivery")
    def delivery_state(self, obj: Email) -> str:
        delivery = getattr(obj, "delivery", None)
        if delivery is None:
            return "none (nothing to send)"
        error = f"; last error: {delivery.last_error}" if delivery.last_error else ""
        return f"{delivery.status} after {delivery.attempts} attempt(s){error}"


_DELIVERY_FIELDS = (
    "email",
    "project",
    "email_status",
    "status",
    "attempts",
    "error_code",
    "last_error",
    "next_attempt_at",
    "lease_expires_at",
    "created_at",
)


@admin.register(DeadLetteredEmailDelivery)
class DeadLetteredEmailDeliveryAdmin(DeadLetterAdmin):
    """Deliveries whose retries ran out (their emails are `failed`), with the last error;
    requeue one or many: the email goes back to `queued` and the workers are woken."""

    list_display = ["email", "project", "error_code", "short_error", "attempts", "created_at"]
    list_filter = [ErrorCodeFilter]
    list_select_related = ["email", "email__project"]
    search_fields = ["=email__id", "=email__message_id", "last_error"]
    search_help_text = "Email id or Message-ID (exact), or words of the last error."
    readonly_fields = _DELIVERY_FIELDS
    fields = _DELIVERY_FIELDS
    item, items = "delivery", "deliveries"

    @admin.display(description="project")
    def project(self, obj: EmailDelivery) -> str:
        return str(obj.email.project)

    @admin.display(description="email status")
    def email_status(self, obj: EmailDelivery) -> str:
        return obj.email.status

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return email_deliveries_requeue(ids=ids)


def _parsed(raw: bytes) -> EmailMessage:
    return message_from_bytes(raw, policy=policy.default)


def _part(message: EmailMessage, kind: str) -> str | None:
    part: Any = message.get_body((kind,))
    return None if part is None else str(part.get_content())


@admin.register(CapturedMessage)
class CapturedMessageAdmin(ReadOnlyModelAdmin):
    """What the local capture kept instead of sending, like Mailpit: the HTML part in a
    sandboxed frame (no scripts, no same-origin access), the text part, the headers."""

    list_display = ["subject", "envelope_from", "recipients", "created_at"]
    list_select_related = ["email"]
    search_fields = ["=message_id", "subject"]
    raw_id_fields = ["email"]
    readonly_fields = (
        "id",
        "email",
        "envelope_from",
        "envelope_to",
        "subject",
        "message_id",
        "created_at",
        "html_preview",
        "text_part",
        "header_table",
    )
    fields = readonly_fields

    @admin.display(description="to")
    def recipients(self, obj: CapturedMessage) -> str:
        return ", ".join(obj.envelope_to)

    @admin.display(description="HTML part")
    def html_preview(self, obj: CapturedMessage) -> SafeString | str:
        html = _part(_parsed(bytes(obj.raw)), "html")
        if html is None:
            return "(no HTML part)"
        # format_html escapes the document into the attribute; the empty sandbox blocks
        # scripts, forms and same-origin access, so a message cannot act on the console.
        return format_html(
            '<iframe sandbox="" srcdoc="{}" style="width:100%;height:480px;border:1px solid #ccc">'
            "</iframe>",
            html,
        )

    @admin.display(description="text part")
    def text_part(self, obj: CapturedMessage) -> SafeString | str:
        text = _part(_parsed(bytes(obj.raw)), "plain")
        return "(no text part)" if text is None else format_html("<pre>{}</pre>", text)

    @admin.display(description="headers")
    def header_table(self, obj: CapturedMessage) -> SafeString:
        return format_html(
            "<table>{}</table>",
            format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", obj.headers),
        )
