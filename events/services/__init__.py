"""Writes of events: ingest, processing, the catalog, retention and system events."""

from events.services.system import emit_system_event

__all__ = ["emit_system_event"]
