"""The messaging family's staff console; each sub-domain's module registers its admins."""

from messaging.admin import domains, suppressions, templates

__all__ = ["domains", "suppressions", "templates"]
