"""The tunables of messaging: email delivery, the campaign fan-out, the sending domains'
DNS checks and the links written into emails. Most are settings read from the
environment (config/settings/base.py); the rest are Django settings with the defaults
below."""

from django.conf import settings

from config.workqueue.policy import RetryPolicy, retry_policy_for

# 10 s, 30 s, 90 s ... capped at an hour; eight attempts span about five hours. Overridden
# service-wide by EMAIL_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS, _MAX_ATTEMPTS.
DEFAULT_RETRY_POLICY = RetryPolicy(
    base_seconds=10.0, factor=3.0, cap_seconds=3600.0, max_attempts=8
)
# 5 s, 10 s, 20 s ... capped at five minutes; a batch fails only when the database does.
# Overridden service-wide by CAMPAIGN_FANOUT_RETRY_BASE_SECONDS, _FACTOR, _CAP_SECONDS,
# _MAX_ATTEMPTS.
DEFAULT_FANOUT_RETRY_POLICY = RetryPolicy(
    base_seconds=5.0, factor=2.0, cap_seconds=300.0, max_attempts=10
)
DEFAULT_WAKE_DEBOUNCE_SECONDS = 0.5
DEFAULT_WAKE_SETTLE_SECONDS = 0.3
DEFAULT_TASK_TIME_BUDGET_SECONDS = 30.0


# --- email delivery --------------------------------------------------------------------------


def claim_batch_size() -> int:
    """Deliveries one claim takes (and sends over one connection)."""
    return int(settings.EMAIL_CLAIM_BATCH_SIZE)


def lease_seconds() -> float:
    """How long a claim holds before another worker may take the deliveries over."""
    return float(settings.EMAIL_LEASE_SECONDS)


def wake_debounce_seconds() -> float:
    return float(getattr(settings, "EMAIL_WAKE_DEBOUNCE_SECONDS", DEFAULT_WAKE_DEBOUNCE_SECONDS))


def wake_settle_seconds() -> float:
    return float(getattr(settings, "EMAIL_WAKE_SETTLE_SECONDS", DEFAULT_WAKE_SETTLE_SECONDS))


def task_time_budget_seconds() -> float:
    """How long one delivery task sends before handing the rest to a fresh task."""
    return float(
        getattr(settings, "EMAIL_TASK_TIME_BUDGET_SECONDS", DEFAULT_TASK_TIME_BUDGET_SECONDS)
    )


def retry_policy(delivery: object = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="EMAIL_RETRY_")


def use_localtime() -> bool:
    """Django's `EMAIL_USE_LOCALTIME`: the `Date` header in local time rather than UTC."""
    return bool(settings.EMAIL_USE_LOCALTIME)


def public_base_url() -> str:
    """Where the links written into emails (tracking, unsubscribe) point."""
    return str(settings.PUBLIC_BASE_URL)


# --- the campaign fan-out --------------------------------------------------------------------


def fanout_claim_batch_size() -> int:
    return int(settings.CAMPAIGN_FANOUT_CLAIM_BATCH_SIZE)


def fanout_lease_seconds() -> float:
    return float(settings.CAMPAIGN_FANOUT_LEASE_SECONDS)


def fanout_batch_size() -> int:
    """Contacts one fan-out batch covers."""
    return max(int(settings.CAMPAIGN_FANOUT_BATCH_SIZE), 1)


def fanout_task_time_budget_seconds() -> float:
    return float(
        getattr(
            settings,
            "CAMPAIGN_FANOUT_TASK_TIME_BUDGET_SECONDS",
            DEFAULT_TASK_TIME_BUDGET_SECONDS,
        )
    )


def fanout_retry_policy(batch: object = None) -> RetryPolicy:
    return retry_policy_for(
        None, default=DEFAULT_FANOUT_RETRY_POLICY, setting_prefix="CAMPAIGN_FANOUT_RETRY_"
    )


# --- sending domains -------------------------------------------------------------------------


def sending_spf_include() -> str:
    """The domain a sending domain's SPF record includes."""
    return str(settings.SENDING_SPF_INCLUDE)


def dns_resolver() -> str:
    """The resolver the DNS checks ask (blank: the system's)."""
    return str(settings.DNS_RESOLVER).strip()


def dns_timeout_seconds() -> float:
    return float(settings.DNS_TIMEOUT_SECONDS)
