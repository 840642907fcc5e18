"""The tunables of push: delivery, the providers' endpoints and the HTTP client. Most are
settings read from the environment (config/settings/base.py); the rest are Django
settings with the defaults below."""

from django.conf import settings

from config.workqueue.policy import RetryPolicy, retry_policy_for

# 10 s, 30 s, 90 s ... capped at an hour; eight attempts span about five hours. Overridden
# service-wide by PUSH_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS, _MAX_ATTEMPTS.
DEFAULT_RETRY_POLICY = RetryPolicy(
    base_seconds=10.0, factor=3.0, cap_seconds=3600.0, max_attempts=8
)
DEFAULT_WAKE_DEBOUNCE_SECONDS = 0.5
DEFAULT_WAKE_SETTLE_SECONDS = 0.3
DEFAULT_TASK_TIME_BUDGET_SECONDS = 30.0


# --- delivery --------------------------------------------------------------------------------


def claim_batch_size() -> int:
    """Deliveries one claim takes."""
    return int(settings.PUSH_CLAIM_BATCH_SIZE)


def lease_seconds() -> float:
    """How long a claim holds before another worker may take the deliveries over."""
    return float(settings.PUSH_LEASE_SECONDS)


def record_every() -> int:
    """Accepted notifications recorded together (a worker killed mid-batch resends at most
    that many)."""
    return max(int(settings.PUSH_RECORD_EVERY), 1)


def wake_debounce_seconds() -> float:
    return float(getattr(settings, "PUSH_WAKE_DEBOUNCE_SECONDS", DEFAULT_WAKE_DEBOUNCE_SECONDS))


def wake_settle_seconds() -> float:
    return float(getattr(settings, "PUSH_WAKE_SETTLE_SECONDS", DEFAULT_WAKE_SETTLE_SECONDS))


def task_time_budget_seconds() -> float:
    """How long one delivery task sends before handing the rest to a fresh task."""
    return float(
        getattr(settings, "PUSH_TASK_TIME_BUDGET_SECONDS", DEFAULT_TASK_TIME_BUDGET_SECONDS)
    )


def retry_policy(delivery: object = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="PUSH_RETRY_")


# --- providers and the HTTP client -----------------------------------------------------------


def allow_http() -> bool:
    """Plain http to loopback addresses (local providers in development and tests)."""
    return bool(settings.PUSH_ALLOW_HTTP)


def http_timeout() -> float:
    return float(settings.PUSH_HTTP_TIMEOUT)


def fcm_base_url() -> str:
    return str(settings.PUSH_FCM_BASE_URL)


def apns_base_url() -> str:
    """The APNs endpoint for every environment (blank: Apple's, by environment)."""
    return str(settings.PUSH_APNS_BASE_URL)
