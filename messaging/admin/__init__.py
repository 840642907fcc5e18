"""The messaging family's staff console; each sub-domain's module registers its admins."""

from messaging.admin import campaigns, domains, emails, suppressions, templates

__all__ = ["campaigns", "domains", "emails", "suppressions", "templates"]
