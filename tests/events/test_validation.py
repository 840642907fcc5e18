"""The checks of one submission (events/validation.py) decide as docs/API.md, Events, says:
the payload's size and storability as the standard library's compact serialisation
measures them, whichever encoder wrote it, and addresses by the project's policy."""

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.api.errors import ServiceError
from events.validation import event_input_parse
from tenancy.models import EmailNormalization


def project(limit: int, policy: str = EmailNormalization.PLAIN) -> Any:
    # What the checks read of a project.
    return SimpleNamespace(event_payload_limit_bytes=limit, email_normalization=policy)


def expected(payload: dict[str, Any], limit: int) -> tuple[str, Any]:
    """The documented outcome, by the standard library's serialisation alone."""
    try:
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        return "refused", ("validation_error", [("invalid_value", "payload")], "")
    issues = []
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        issues.append(("invalid_value", "payload"))
    if has_nul(payload):
        issues.append(("invalid_characters", "payload"))
    if issues:
        return "refused", ("validation_error", issues, "")
    if size > limit:
        details = f"The payload is {size} bytes serialised; this project allows {limit}."
        return "refused", ("payload_too_large", [("payload_too_large", "payload")], details)
    return "stored", payload


def has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(key) or has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(has_nul(item) for item in value)
    return False


def outcome(payload: dict[str, Any], limit: int) -> tuple[str, Any]:
    body = {"event": "order.completed", "email": "a@example.com", "payload": payload}
    try:
        item = event_input_parse(body, project=project(limit))
    except ServiceError as error:
        issues = [(issue.code, issue.path) for issue in error.issues]
        return "refused", (error.code, issues, error.details)
    return "stored", json.loads(item.payload_json)


def same(a: Any, b: Any) -> bool:
    """Equal, with floats compared bit for bit (NaN and -0.0 included)."""
    if isinstance(a, float) and isinstance(b, float):
        return a.hex() == b.hex() if not (math.isnan(a) and math.isnan(b)) else True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    # Exponents the two encoders write differently (`1e-07`, `1e-7`).
    | st.sampled_from([1e-7, 2.5e-9, 1e-5, 1e16, 1e22, 5e-324, -0.0])
    | st.text(alphabet=st.sampled_from(list('ab"\\\x00\x1f\x7fé\u2028\U0001f600\ud800')))
)
PAYLOADS = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=12,
    ),
    max_size=5,
)


@settings(max_examples=1000, deadline=None)
@given(PAYLOADS, st.integers(min_value=-3, max_value=3))
def test_a_payload_is_measured_and_checked_as_the_standard_library_serialises_it(payload, slack):
    try:
        size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    except (ValueError, UnicodeEncodeError):
        size = 10
    # Limits around the payload's own size: the decision at the edge is the one that counts.
    limit = max(0, size + slack)
    want, got = expected(payload, limit), outcome(payload, limit)
    assert want[0] == got[0], (want, got)
    assert same(want[1], got[1]) if want[0] == "stored" else want == got


@pytest.mark.parametrize(
    ("policy", "normal"),
    [
        (EmailNormalization.PLAIN, "a.b+tag@gmail.com"),
        (EmailNormalization.GMAIL, "ab@gmail.com"),
    ],
)
def test_an_address_is_normalised_by_each_projects_own_policy(policy, normal):
    body = {"event": "order.completed", "email": " A.B+Tag@Gmail.com "}
    for _ in range(2):  # the second time from what the first one learnt
        assert event_input_parse(body, project=project(100, policy)).email == normal
