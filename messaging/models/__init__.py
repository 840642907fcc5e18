"""Models of the messaging family, one module per sub-domain."""

from messaging.models.suppressions import Suppression, SuppressionReason

__all__ = [
    "Suppression",
    "SuppressionReason",
]
