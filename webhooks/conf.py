"""The tunables of outbound webhooks. The ones an operator sets are settings read from the
environment (config/settings/base.py); the rest are Django settings with the defaults
below."""

from django.conf import settings

from config.workqueue.policy import RetryPolicy, retry_policy_for

# 1 min, 3 min, 9 min ... capped at 6 h, 22 attempts: with the jitter (each wait between
# half and all of its step) the retries span about three days (the mean is 72 h, and the
# sum of 21 jittered waits strays little from it). Overridden service-wide by
# WEBHOOK_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS, _MAX_ATTEMPTS.
DEFAULT_RETRY_POLICY = RetryPolicy(
    base_seconds=60.0, factor=3.0, cap_seconds=6 * 3600.0, max_attempts=22
)
# Each batch costs a claim and a record of about ten PostgreSQL round trips in all, which
# a batch of 20 spent more time on than on its requests (bench_webhooks.py); 50 amortise
# them. Sent WEBHOOK_SEND_CONCURRENCY (10) at a time, a batch whose every receiver makes
# us wait out a timeout (10 s) takes five of them, 50 s: after the task's 30 s budget,
# still well inside its soft time limit (180 s) and the lease (600 s).
DEFAULT_CLAIM_BATCH_SIZE = 50
DEFAULT_WAKE_DEBOUNCE_SECONDS = 0.5
DEFAULT_WAKE_SETTLE_SECONDS = 0.3
DEFAULT_TASK_TIME_BUDGET_SECONDS = 30.0
# How long the previous secret keeps signing after a rotation.
SECRET_OVERLAP_HOURS = 24.0
# Deliveries one run of the purge deletes at most.
PURGE_MAX_ROWS_PER_RUN = 10_000
# Response text kept in a failed delivery's error (the body itself is never stored).
ERROR_BODY_CHARACTERS = 200


def allow_http() -> bool:
    """Plain http and loopback endpoints (local receivers in tests only)."""
    return bool(settings.WEBHOOKS_ALLOW_HTTP)


def http_timeout() -> float:
    """Seconds each connect, write and read of a delivery may take."""
    return float(settings.WEBHOOK_TIMEOUT_SECONDS)


def disable_after_hours() -> float:
    """An endpoint whose every attempt failed for this long is disabled."""
    return float(settings.WEBHOOK_DISABLE_AFTER_HOURS)


def replay_max_deliveries() -> int:
    """The most deliveries one replay of a time range requeues."""
    return int(settings.WEBHOOK_REPLAY_MAX_DELIVERIES)


def retention_days() -> float:
    """How long the delivery log keeps delivered and failed deliveries."""
    return float(settings.WEBHOOK_RETENTION_DAYS)


def lease_seconds() -> float:
    """How long a claim holds before another worker may take the deliveries over: longer
    than a batch of timeouts."""
    return float(settings.WEBHOOK_LEASE_SECONDS)


def send_concurrency() -> int:
    """Requests of a batch under way at once."""
    return max(int(settings.WEBHOOK_SEND_CONCURRENCY), 1)


def claim_batch_size() -> int:
    return int(getattr(settings, "WEBHOOK_CLAIM_BATCH_SIZE", DEFAULT_CLAIM_BATCH_SIZE))


def wake_debounce_seconds() -> float:
    return float(getattr(settings, "WEBHOOK_WAKE_DEBOUNCE_SECONDS", DEFAULT_WAKE_DEBOUNCE_SECONDS))


def wake_settle_seconds() -> float:
    return float(getattr(settings, "WEBHOOK_WAKE_SETTLE_SECONDS", DEFAULT_WAKE_SETTLE_SECONDS))


def task_time_budget_seconds() -> float:
    """How long one delivery task sends before handing the rest to a fresh task."""
    return float(
        getattr(settings, "WEBHOOK_TASK_TIME_BUDGET_SECONDS", DEFAULT_TASK_TIME_BUDGET_SECONDS)
    )


def retry_policy(delivery: object = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="WEBHOOK_RETRY_")
