"""The one clock of the service. Tests move it; everything else reads it."""

import datetime as dt
from collections.abc import Callable


def _utc_now() -> dt.datetime:
    # What `django.utils.timezone.now` gives with `USE_TZ` (always on here), without its
    # lookup of the setting through the lazy settings object: a sweep reads the clock a
    # few times per run, and that lookup cost more than the reading.
    return dt.datetime.now(dt.UTC)


_source: Callable[[], dt.datetime] = _utc_now


def now() -> dt.datetime:
    """The current aware UTC time, as the service sees it."""
    return _source()


def set_source(source: Callable[[], dt.datetime] | None) -> None:
    """Replace the clock (None restores the real one). For tests and simulations."""
    global _source
    _source = source or _utc_now


def iso_utc(moment: dt.datetime) -> str:
    """An aware time as every API answer writes it: ISO 8601 in UTC with `Z`, microseconds
    kept when there are any."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
