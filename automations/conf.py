"""Tunables of the run engine, overridable by Django settings for the whole service."""

from typing import Any

from django.conf import settings

from config.workqueue import policy
from config.workqueue.policy import RetryPolicy

# A run's job fails only on what may pass (the database, a deadlock, a worker stopping):
# domain errors of a step (a template gone, a contact without an email) fail the run
# itself and are not retried. 5 s, 10 s, 20 s ... capped at 10 minutes, 8 attempts.
DEFAULT_RETRY_POLICY = RetryPolicy(base_seconds=5.0, factor=2.0, cap_seconds=600.0, max_attempts=8)


def setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def claim_batch_size() -> int:
    """Runs one claim takes. A batch's writes are a few statements whatever its size
    (automations/services/writes.py), so a larger claim costs less per run: resuming due
    waits went from about 1,900 to 2,450 per second in-process from 100 to 250. A batch
    still costs about 5 ms of Python and 5 ms of PostgreSQL CPU whatever its size (its
    twenty statements), 0.02 ms per run at 500 (CPU per resumed wait 0.32 ms at 250,
    0.30 at 500, in-process)."""
    return int(setting("AUTOMATIONS_CLAIM_BATCH", 500))


def lease_seconds() -> float:
    """How long a claim holds before another worker may take the run over."""
    return float(setting("AUTOMATIONS_LEASE_SECONDS", 60))


def wake_debounce_seconds() -> float:
    """At most one wake-up task per this many seconds across all processes."""
    return float(setting("AUTOMATIONS_WAKE_DEBOUNCE_SECONDS", 0.5))


def wake_settle_seconds() -> float:
    """How long a worker that ran dry waits before its last look (see events/conf.py)."""
    return float(setting("AUTOMATIONS_WAKE_SETTLE_SECONDS", 0.3))


def task_time_budget_seconds() -> float:
    """How long one advancing task loops before handing the rest to a fresh task."""
    return float(setting("AUTOMATIONS_TASK_BUDGET_SECONDS", 20))


def wait_recheck_seconds() -> float:
    """How long a run whose `wait_for_event` deadline passed waits before the engine looks
    again, while an event accepted before the deadline that may match is unprocessed.
    Matching makes the run's job due at once; this bounds only how late a timeout is
    taken once that event turned out not to match."""
    return float(setting("AUTOMATIONS_WAIT_RECHECK_SECONDS", 5))


def test_run_step_limit() -> int:
    """Steps a test run may take before it is stopped (a loop through a wait would
    otherwise run on its virtual clock for ever)."""
    return int(setting("AUTOMATIONS_TEST_RUN_STEP_LIMIT", 500))


def retry_policy_for(job: Any = None) -> RetryPolicy:
    return policy.retry_policy_for(
        None, default=DEFAULT_RETRY_POLICY, setting_prefix="AUTOMATIONS_RETRY_"
    )
