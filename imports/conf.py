"""The tunables of imports. The upload limits, the chunk size and the lease are settings
read from the environment (config/settings/base.py); the rest are Django settings with
the defaults below."""

from django.conf import settings

from config.workqueue.policy import RetryPolicy, retry_policy_for

# JSON imports are parsed in memory: a smaller body and fewer rows (larger ones: CSV).
DEFAULT_MAX_JSON_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_JSON_ROWS = 10_000
# Distinct audience (and topic) names one import may name; rows past it are invalid.
DEFAULT_MAX_NAMES = 1000
DEFAULT_TASK_TIME_BUDGET_SECONDS = 60.0
# 5 s, 15 s, 45 s ... capped at 10 minutes; five attempts, then the import fails.
DEFAULT_RETRY_POLICY = RetryPolicy(base_seconds=5.0, factor=3.0, cap_seconds=600.0, max_attempts=5)


def max_file_bytes() -> int:
    """A CSV upload at most this large; a larger one is 413 before it is read."""
    return int(settings.IMPORT_MAX_FILE_BYTES)


def max_rows() -> int:
    """Data rows of one import; more is 413 (the file is refused whole)."""
    return int(settings.IMPORT_MAX_ROWS)


def max_json_bytes() -> int:
    return int(getattr(settings, "IMPORT_MAX_JSON_BYTES", DEFAULT_MAX_JSON_BYTES))


def max_json_rows() -> int:
    return int(getattr(settings, "IMPORT_MAX_JSON_ROWS", DEFAULT_MAX_JSON_ROWS))


def max_names() -> int:
    return int(getattr(settings, "IMPORT_MAX_NAMES", DEFAULT_MAX_NAMES))


def chunk_rows() -> int:
    """Rows per chunk: the unit of planning (preview) and of a commit's work items."""
    return int(settings.IMPORT_CHUNK_ROWS)


def lease_seconds() -> float:
    """A worker holds a chunk this long before another may take it over."""
    return float(settings.IMPORT_LEASE_SECONDS)


def task_time_budget_seconds() -> float:
    return float(
        getattr(settings, "IMPORT_TASK_TIME_BUDGET_SECONDS", DEFAULT_TASK_TIME_BUDGET_SECONDS)
    )


def retry_policy(chunk: object = None) -> RetryPolicy:
    return retry_policy_for(None, default=DEFAULT_RETRY_POLICY, setting_prefix="IMPORT_RETRY_")
