"""Query parameters several endpoints read the same way."""

import datetime as dt
import re

from rest_framework.request import Request

from config.api.errors import ValidationFailed

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def date_param(request: Request, name: str) -> dt.date | None:
    """The day the query parameter `name` names (`2026-01-31`, UTC); None when absent; a
    400 at `name` when it is not such a day."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        if not _DATE.fullmatch(raw):
            raise ValueError(raw)
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValidationFailed.at(
            name, "Must be a date: `YYYY-MM-DD` (UTC).", code="invalid_date"
        ) from None
