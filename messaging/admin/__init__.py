"""The messaging family's staff console; each sub-domain's module registers its admins."""

from messaging.admin import templates

__all__ = ["templates"]
