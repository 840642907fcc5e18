"""Retry policies: exponential backoff with equal jitter and a cap, then dead-letter."""

import datetime as dt
import random
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class RetryPolicy:
    base_seconds: float
    factor: float
    cap_seconds: float
    max_attempts: int

    def delay(self, attempt: int) -> dt.timedelta:
        """Backoff after failed attempt number `attempt` (1-based): exponential, capped,
        with "equal jitter" (half fixed, half random) so retries of a burst spread out."""
        ceiling = min(self.cap_seconds, self.base_seconds * self.factor ** max(attempt - 1, 0))
        return dt.timedelta(seconds=ceiling / 2 + random.uniform(0, ceiling / 2))


_KINDS = {"base_seconds": float, "factor": float, "cap_seconds": float, "max_attempts": int}


def retry_policy_for(
    owner: Any, *, default: RetryPolicy, setting_prefix: str = "", field_prefix: str = ""
) -> RetryPolicy:
    """`default`, overridden service-wide by the Django setting `<setting_prefix><NAME>`
    (e.g. `EVENTS_RETRY_MAX_ATTEMPTS`) and for one owner (e.g. a project) by its
    attribute `<field_prefix><name>` (e.g. `event_retry_max_attempts`) when not None."""
    changes: dict[str, Any] = {}
    for name, kind in _KINDS.items():
        value = getattr(owner, f"{field_prefix}{name}", None) if field_prefix else None
        if value is None and setting_prefix:
            value = getattr(settings, f"{setting_prefix}{name.upper()}", None)
        if value is not None:
            changes[name] = kind(value)
    return replace(default, **changes) if changes else default
