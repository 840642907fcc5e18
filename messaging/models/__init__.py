"""The messaging family's models, one module per sub-domain."""

from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState

__all__ = ["Channel", "MessageTemplate", "TemplateVersion", "VersionState"]
