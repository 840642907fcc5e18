"""The messaging family's models, one module per sub-domain."""

from messaging.models.domains import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.models.suppressions import Suppression, SuppressionReason
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState

__all__ = [
    "Channel",
    "Domain",
    "DomainRecord",
    "DomainStatus",
    "MessageTemplate",
    "RecordPurpose",
    "Suppression",
    "SuppressionReason",
    "TemplateVersion",
    "VersionState",
]
