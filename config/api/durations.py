"""ISO 8601 durations as the API writes them (definitions, frequency caps): weeks, days,
hours, minutes, seconds."""

import datetime as dt
import re

# Months and years are left out: their length depends on the calendar.
_DURATION = re.compile(
    r"P(?:(?P<weeks>[0-9]{1,9})W)?(?:(?P<days>[0-9]{1,9})D)?"
    r"(?:T(?=[0-9])(?:(?P<hours>[0-9]{1,9})H)?(?:(?P<minutes>[0-9]{1,9})M)?"
    r"(?:(?P<seconds>[0-9]{1,12})S)?)?"
)
_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}

MIN_DURATION = dt.timedelta(seconds=1)
MAX_DURATION = dt.timedelta(days=366)


def parse_duration(text: str) -> dt.timedelta | None:
    """`PT10M`, `P1D`, `P1DT2H`, `P2W` as a timedelta; None when `text` is not such a
    duration or lies outside one second to 366 days."""
    match = _DURATION.fullmatch(text)
    if match is None or text in ("P", "PT"):
        return None
    parts = {name: int(value) for name, value in match.groupdict().items() if value is not None}
    if not parts:
        return None
    # Summed as integers first: a huge count must not overflow timedelta.
    seconds = sum(_SECONDS[name] * count for name, count in parts.items())
    if not MIN_DURATION.total_seconds() <= seconds <= MAX_DURATION.total_seconds():
        return None
    return dt.timedelta(seconds=seconds)
