"""The messaging family's staff console; each sub-domain's module registers its admins."""

from messaging.admin import domains, emails, suppressions, templates

__all__ = ["domains", "emails", "suppressions", "templates"]
