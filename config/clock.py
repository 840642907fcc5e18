"""The one clock of the service. Tests move it; everything else reads it."""

import datetime as dt
from collections.abc import Callable

from django.utils import timezone

_source: Callable[[], dt.datetime] = timezone.now


def now() -> dt.datetime:
    """The current aware UTC time, as the service sees it."""
    return _source()


def set_source(source: Callable[[], dt.datetime] | None) -> None:
    """Replace the clock (None restores the real one). For tests and simulations."""
    global _source
    _source = source or timezone.now


def iso_utc(moment: dt.datetime) -> str:
    """An aware time as every API answer writes it: ISO 8601 in UTC with `Z`, microseconds
    kept when there are any."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
