"""Evaluation of trigger filters and branch conditions (CONTRACT section 11):
`{"all"|"any": [{"path", "op", "value"}]}` over what a run knows.

A path reads `payload.…` (the trigger event's payload), `contact.id|email|external_id`,
`contact.fields.…`, and in branches `steps.<key>.outcome` and
`steps.<key>.event.payload.…` (an earlier `wait_for_event`). A path that leads nowhere is
*absent*: `exists` says so, `ne` holds, and every other comparison fails. Numbers compare
as numbers (`1` equals `1.0`; `true` is not `1`), strings with strings (ISO 8601 times
order correctly); a number never orders against a string.
"""

from collections.abc import Mapping
from typing import Any

_ABSENT = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _dig(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _ABSENT
    return value


def resolve_path(path: str, facts: Mapping[str, Any]) -> Any:
    """The value at `path` in `facts` (`{"payload", "contact", "steps"}`), or `_ABSENT`."""
    head, *rest = path.split(".")
    if head not in facts:
        return _ABSENT
    return _dig(facts[head], rest)


def _equal(left: Any, right: Any) -> bool:
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    return bool(type(left) is type(right) and left == right)


def _ordered(left: Any, right: Any, op: str) -> bool:
    numbers = _is_number(left) and _is_number(right)
    if not (numbers or (isinstance(left, str) and isinstance(right, str))):
        return False
    if op == "gt":
        return bool(left > right)
    if op == "gte":
        return bool(left >= right)
    if op == "lt":
        return bool(left < right)
    return bool(left <= right)


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item in container
    if isinstance(container, list):
        return any(_equal(element, item) for element in container)
    if isinstance(container, Mapping):
        return isinstance(item, str) and item in container
    return False


def comparison_holds(comparison: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    actual = resolve_path(comparison["path"], facts)
    op: str = comparison["op"]
    if op == "exists":
        wanted = comparison.get("value", True)
        return (actual is not _ABSENT) is bool(wanted)
    if actual is _ABSENT:
        return op == "ne"
    value = comparison.get("value")
    if op == "eq":
        return _equal(actual, value)
    if op == "ne":
        return not _equal(actual, value)
    if op in ("gt", "gte", "lt", "lte"):
        return _ordered(actual, value, op)
    if op == "contains":
        return _contains(actual, value)
    if op == "in":
        return isinstance(value, list) and any(_equal(actual, item) for item in value)
    return False


def condition_holds(condition: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> bool:
    """Whether the condition holds; no condition always does."""
    if not condition:
        return True
    if "all" in condition:
        return all(comparison_holds(each, facts) for each in condition["all"])
    return any(comparison_holds(each, facts) for each in condition["any"])


def payload_value(payload: Any, dotted: str) -> str | None:
    """The value at a dotted path of a payload as a correlation value (strings as they
    are, other scalars as their JSON text), or None when absent, null or not a scalar."""
    value = _dig(payload, dotted.split("."))
    if value is _ABSENT or value is None or isinstance(value, Mapping | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)[:500]
