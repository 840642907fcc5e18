"""JSON values the service stores (contact fields, member properties, any JSON column):
what PostgreSQL can hold, and how large they are. Every app checks stored JSON here."""

import json
import math
from collections.abc import Iterator
from typing import Any

from config.api.errors import Issue, PayloadTooLarge

# One answer lists at most this many bad values; the rest are found after the fix.
MAX_ISSUES = 20

_NUL_ESCAPE = "\\u0000"


def serialised(value: Any) -> str:
    """The compact JSON text sizes are measured on (as for event payloads)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON."""
    return len(serialised(value).encode("utf-8"))


def text_problem(text: str) -> str | None:
    """Why PostgreSQL cannot store `text` (a NUL or a lone surrogate), or None."""
    if "\x00" in text:
        return "Text must not contain NUL characters."
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "Text must be valid Unicode (no lone surrogates)."
    return None


def _walk(value: Any, path: str) -> Iterator[Issue]:
    # An explicit stack: the parser bounds nesting, but services take values from anywhere.
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            problem = text_problem(current)
            if problem:
                yield Issue("invalid_characters", where, problem)
        elif isinstance(current, bool) or current is None or isinstance(current, int):
            continue
        elif isinstance(current, float):
            if not math.isfinite(current):
                yield Issue("invalid_value", where, "Must be a finite number.")
        elif isinstance(current, dict):
            items = []
            for key, item in current.items():
                child = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and (problem := text_problem(key)):
                    yield Issue("invalid_characters", child, f"The key is not allowed: {problem}")
                else:
                    items.append((item, child))
            stack.extend(reversed(items))
        elif isinstance(current, list):
            stack.extend(
                reversed(
                    [(item, f"{where}.{i}" if where else str(i)) for i, item in enumerate(current)]
                )
            )
        else:
            yield Issue("invalid_type", where, "Must be a JSON value.")


def stored_json_issues(value: Any, path: str = "") -> list[Issue]:
    """What keeps `value` out of a JSON column, each problem at its dotted path under `path`
    (`fields.nickname`); empty when it can be stored."""
    try:
        text = serialised(value)
        text.encode("utf-8")
    except (TypeError, ValueError):
        pass  # UnicodeEncodeError is a ValueError: walk to say where.
    else:
        if _NUL_ESCAPE not in text:
            return []
    issues = []
    for issue in _walk(value, path):
        issues.append(issue)
        if len(issues) >= MAX_ISSUES:
            break
    return issues


def json_size_checked(value: Any, *, limit: int, path: str, policy: str) -> int:
    """The serialised size of `value`; 422 `payload_too_large` at `path` when it exceeds
    `limit`, the project's `policy`."""
    size = json_size(value)
    if size > limit:
        raise PayloadTooLarge(
            f"`{path}` is larger than the project's {policy}.",
            details=f"`{path}` is {size} bytes serialised; this project allows {limit}.",
            issues=[Issue("payload_too_large", path, f"At most {limit} bytes serialised.")],
        )
    return size
