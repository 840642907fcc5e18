"""Staff console of the messaging family, one module per sub-domain."""

from messaging.admin import domains, suppressions

__all__ = ["domains", "suppressions"]
