"""ISO 8601 durations as definitions write them (config/api/durations.py: the project's
frequency caps take the same form)."""

from config.api.durations import MAX_DURATION, MIN_DURATION, parse_duration

__all__ = ["MAX_DURATION", "MIN_DURATION", "parse_duration"]
