"""Checks a membership's property values against the audience's typed properties."""

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from config.api.errors import Issue, ValidationFailed
from config.runtime import clock
from contacts.audiences.models import AudienceProperty, PropertyType

MAX_STRING_LENGTH = 2000


def _date(value: Any) -> str | None:
    """`YYYY-MM-DD`, or a date-time with an offset (kept in UTC with `Z`)."""
    if not isinstance(value, str):
        return None
    if len(value) == 10:
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return clock.iso_utc(moment)


def _coerced(kind: str, value: Any) -> tuple[bool, Any]:
    if kind == PropertyType.STRING:
        return isinstance(value, str) and len(value) <= MAX_STRING_LENGTH, value
    if kind == PropertyType.NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok and math.isfinite(value), value
    if kind == PropertyType.BOOLEAN:
        return isinstance(value, bool), value
    if kind == PropertyType.DATE:
        normal = _date(value)
        return normal is not None, normal
    return False, value


_EXPECTED: dict[str, str] = {
    PropertyType.STRING: f"a string of at most {MAX_STRING_LENGTH} characters",
    PropertyType.NUMBER: "a finite number",
    PropertyType.BOOLEAN: "true or false",
    PropertyType.DATE: "a date (YYYY-MM-DD) or a date-time with an offset (ISO 8601)",
}


def property_values_checked(
    *, properties: Mapping[str, AudienceProperty], values: Mapping[str, Any], path: str
) -> dict[str, Any]:
    """`values` in their stored form (None kept: it removes the key). Every problem becomes
    one issue at `<path>.<key>`; any issue rejects the whole request."""
    issues: list[Issue] = []
    checked: dict[str, Any] = {}
    for key, value in values.items():
        prop = properties.get(key)
        if prop is None:
            issues.append(
                Issue(
                    code="unknown_property",
                    path=f"{path}.{key}",
                    message="The audience has no property with this key.",
                )
            )
            continue
        if value is None:
            checked[key] = None
            continue
        ok, normal = _coerced(prop.type, value)
        if not ok:
            issues.append(
                Issue(
                    code="invalid_value",
                    path=f"{path}.{key}",
                    message=(
                        f"Property `{key}` is of type {prop.type}: expected {_EXPECTED[prop.type]}."
                    ),
                )
            )
            continue
        checked[key] = normal
    if issues:
        raise ValidationFailed("Some property values do not fit their properties.", issues=issues)
    return checked
