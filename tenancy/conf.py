"""The tunables of tenancy: metering, the rate limit, the local cache and the demo login.
Most are settings read from the environment (config/settings/base.py); the rest are
Django settings with the defaults below."""

from django.conf import settings

DEFAULT_API_RATE_LIMIT = 1000
DEFAULT_LOCAL_CACHE_SECONDS = 5.0
DEFAULT_USAGE_FLUSH_SECONDS = 1.0


def api_rate_limit() -> int:
    """Requests per second a key may make when its plan sets no limit; 0 means none."""
    return int(getattr(settings, "API_RATE_LIMIT", DEFAULT_API_RATE_LIMIT))


def local_cache_seconds() -> float:
    """How long a process keeps what it read from the shared cache."""
    return float(getattr(settings, "LOCAL_CACHE_SECONDS", DEFAULT_LOCAL_CACHE_SECONDS))


def usage_metering() -> bool:
    """Whether usage is counted and plan limits are enforced."""
    return bool(settings.USAGE_METERING)


def usage_flush_seconds() -> float:
    """How often a process writes the usage it counted."""
    return float(getattr(settings, "USAGE_FLUSH_SECONDS", DEFAULT_USAGE_FLUSH_SECONDS))


def demo_admin_allowed() -> bool:
    """Whether `create_demo_admin` may make a login whose password it prints."""
    return bool(settings.DEMO_ADMIN_ALLOWED)
