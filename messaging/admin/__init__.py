"""Staff console of the messaging family, one module per sub-domain."""

from messaging.admin import suppressions

__all__ = ["suppressions"]
