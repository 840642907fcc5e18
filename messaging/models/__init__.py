"""Models of the messaging family, one module per sub-domain."""

from messaging.models.domains import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.models.suppressions import Suppression, SuppressionReason

__all__ = [
    "Domain",
    "DomainRecord",
    "DomainStatus",
    "RecordPurpose",
    "Suppression",
    "SuppressionReason",
]
