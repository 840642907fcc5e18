"""Tunables of the event pipeline: CONTRACT defaults, overridable per project through its
`event_retry_*` policies, and by Django settings for the whole service."""

from typing import Any

from django.conf import settings

from config.workqueue import policy
from config.workqueue.policy import RetryPolicy

# CONTRACT section 5: base 2 s, factor 2, cap 10 min, 8 attempts.
RETRY_BASE_SECONDS = 2.0
RETRY_FACTOR = 2.0
RETRY_CAP_SECONDS = 600.0
RETRY_MAX_ATTEMPTS = 8
DEFAULT_RETRY_POLICY = RetryPolicy(
    RETRY_BASE_SECONDS, RETRY_FACTOR, RETRY_CAP_SECONDS, RETRY_MAX_ATTEMPTS
)

MAX_BATCH_ITEMS = 500
MAX_NAME_LENGTH = 200
MAX_IDEMPOTENCY_KEY_LENGTH = 255
MAX_EXTERNAL_ID_LENGTH = 255


def setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def claim_batch_size() -> int:
    """Events one claim takes: small enough to keep claims short, big enough to amortise."""
    return int(setting("EVENTS_CLAIM_BATCH", 100))


def lease_seconds() -> float:
    """How long a claim holds before another worker may take the event over."""
    return float(setting("EVENTS_LEASE_SECONDS", 60))


def wake_debounce_seconds() -> int:
    """At most one wake-up task per this many seconds across all web processes."""
    return int(setting("EVENTS_WAKE_DEBOUNCE_SECONDS", 1))


def wake_settle_seconds() -> float:
    """How long a worker that ran dry waits before its last look. Web processes check the
    shared wake-up signal at most every 0.25 s (config/workqueue/wake.py), so one that looked just
    before the worker re-armed it publishes nothing for that long; waiting it out means an
    event committed in that window is processed now, not at the next beat sweep."""
    return float(setting("EVENTS_WAKE_SETTLE_SECONDS", 0.3))


def task_time_budget_seconds() -> float:
    """How long one processing task loops before handing the rest to a fresh task."""
    return float(setting("EVENTS_TASK_BUDGET_SECONDS", 20))


def retry_policy_for(project: Any) -> RetryPolicy:
    """The project's retry policy: CONTRACT's defaults, the `EVENTS_RETRY_<NAME>` settings
    over them, and a project field `event_retry_<name>` over those when set."""
    return policy.retry_policy_for(
        project,
        default=DEFAULT_RETRY_POLICY,
        setting_prefix="EVENTS_RETRY_",
        field_prefix="event_retry_",
    )
