"""The catalogue of system event types (`sendrealm.*`): each family declares the events it
emits through the outbox (config/registries/outbox.py), with a description and an example
payload, from its apps.py; outbound webhooks list them (`GET /webhook-event-types`) and
check subscriptions against them. Plain data, free of models, so apps.py may import it."""

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ImproperlyConfigured

SYSTEM_PREFIX = "sendrealm."


@dataclass(frozen=True)
class SystemEventType:
    """One system event: its name as emitted (`contact.created`, without the prefix), what
    it means, and a payload such as the outbox records."""

    name: str
    description: str
    example: dict[str, Any] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        """The event's name as stored and delivered: `sendrealm.<name>`."""
        return f"{SYSTEM_PREFIX}{self.name}"


_types: dict[str, SystemEventType] = {}


def register_system_event_types(*types: SystemEventType) -> None:
    """Declares system event types (once each; the same declaration again is a no-op, a
    different one under a taken name is a configuration error)."""
    for declared in types:
        if declared.name.startswith(SYSTEM_PREFIX):
            raise ImproperlyConfigured(f"Declare {declared.name!r} without its prefix.")
        known = _types.get(declared.name)
        if known is not None and known != declared:
            raise ImproperlyConfigured(f"System event {declared.name!r} is declared twice.")
        _types[declared.name] = declared


def unregister_system_event_type(name: str) -> None:
    _types.pop(name, None)


def system_event_types() -> list[SystemEventType]:
    """Every declared type, by name."""
    return sorted(_types.values(), key=lambda declared: declared.name)


def system_event_type(full_name: str) -> SystemEventType | None:
    """The declared type of `sendrealm.<name>`, or None."""
    if not full_name.startswith(SYSTEM_PREFIX):
        return None
    return _types.get(full_name[len(SYSTEM_PREFIX) :])
