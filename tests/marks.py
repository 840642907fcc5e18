"""Marks for tests that only one of the suite's two databases can run."""

import pytest
from django.conf import settings


def postgresql_only(reason: str) -> pytest.MarkDecorator:
    """Skips the test on `make test`'s SQLite run; `reason` names what needs PostgreSQL."""
    engine = settings.DATABASES["default"]["ENGINE"]
    return pytest.mark.skipif(
        engine != "django.db.backends.postgresql", reason=f"needs PostgreSQL: {reason}"
    )
