"""The messaging family's models, one module per sub-domain."""

from messaging.models.domains import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.models.emails import (
    CapturedMessage,
    DeadLetteredEmailDelivery,
    Email,
    EmailDelivery,
    EmailStatus,
    EspEventReceipt,
)
from messaging.models.suppressions import Suppression, SuppressionReason
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState

__all__ = [
    "CapturedMessage",
    "Channel",
    "DeadLetteredEmailDelivery",
    "Domain",
    "DomainRecord",
    "DomainStatus",
    "Email",
    "EmailDelivery",
    "EmailStatus",
    "EspEventReceipt",
    "MessageTemplate",
    "RecordPurpose",
    "Suppression",
    "SuppressionReason",
    "TemplateVersion",
    "VersionState",
]
