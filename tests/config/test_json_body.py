"""Every JSON body reads as the standard library reads it (config/api/parsers.py
`json_body`): orjson where it agrees, the standard library where it does not, and nesting
bounded the same way whichever reads it."""

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.api.errors import InvalidJson
from config.api.parsers import (
    MAX_DEPTH,
    _nesting_exceeds_valid,
    _reject_constant,
    json_body,
    nesting_exceeds,
)

LIMIT = 10 * 1024 * 1024


def standard(raw: bytes) -> tuple[str, Any]:
    """The body as the documented rules read it with the standard library alone: the
    nesting scan first, then `json.loads` with strict numbers."""
    text = raw.decode("utf-8")
    if nesting_exceeds(text):
        return "refused", f"Arrays and objects nest deeper than {MAX_DEPTH} levels."
    try:
        return "read", typed(json.loads(text, parse_constant=_reject_constant))
    except json.JSONDecodeError as exc:
        return "refused", f"Line {exc.lineno}, column {exc.colno}."
    except InvalidJson as exc:
        return "refused", exc.details


def read(raw: bytes) -> tuple[str, Any]:
    try:
        return "read", typed(json_body(raw, limit=LIMIT, declared=len(raw), encoding="utf-8"))
    except InvalidJson as exc:
        return "refused", exc.details


def typed(value: Any) -> Any:
    """`value` with every number's type and exact value spelt out (1 and 1.0, 0.0 and -0.0
    compare equal in Python) and every object's members in order."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, list):
        return [typed(item) for item in value]
    return ("object", [(key, typed(item)) for key, item in value.items()])


# Text with what makes reading and the nesting scan hard: brackets, quotes, backslashes,
# control characters, lone surrogates (written as escapes), and text past the BMP.
TEXT = st.text(
    alphabet=st.sampled_from(
        list('[]{}"\\/ ,:0123456789abcé\n\t\x00\x1f\x7f\u2028\ufeff\U0001f600\ud800\udc00')
    ),
    max_size=12,
)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
)
VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=25,
)
# Spellings of numbers the encoder never writes.
NUMBER_TEXTS = st.sampled_from(
    [
        "1e400",
        "-1e400",
        "1E5",
        "1e-400",
        "-0",
        "-0.0",
        "0.1000000000000000055511151231257827",
        "12345678901234567890",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775809",
        "NaN",
        "Infinity",
        "01",
        "1.",
        ".5",
    ]
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    value = draw(VALUES)
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
        separators=draw(st.sampled_from([None, (",", ":")])),
    )
    if draw(st.booleans()):
        text = f'{{"n": {draw(NUMBER_TEXTS)}, "v": {text}}}'
    if draw(st.booleans()):
        depth = draw(st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3))
        text = "[" * depth + text + "]" * depth
    raw = text.encode("utf-8", "surrogatepass")
    if raw and draw(st.booleans()):
        # A byte changed, dropped or added somewhere: mostly not JSON any more.
        at = draw(st.integers(min_value=0, max_value=len(raw) - 1))
        byte = bytes([draw(st.integers(min_value=0, max_value=255))])
        raw = draw(st.sampled_from([raw[:at] + byte + raw[at + 1 :], raw[:at] + raw[at + 1 :]]))
    return raw


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies())
def test_a_body_reads_as_the_standard_library_reads_it(raw):
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        assert read(raw) == ("refused", "The body is not valid utf-8 text.")
        return
    assert read(raw) == standard(raw)


@st.composite
def valid_documents(draw: st.DrawFn) -> str:
    """Valid JSON nested about as deep as the bound, strings full of brackets and escapes."""
    text = json.dumps(draw(VALUES), ensure_ascii=draw(st.booleans()))
    for _ in range(draw(st.integers(min_value=0, max_value=MAX_DEPTH + 4))):
        wrap = draw(st.sampled_from(["[{}]", '{{"[": {}}}', '[{}, "]]}}"]', '{{"k\\"[": [{}]}}']))
        text = wrap.format(text)
    return text


@settings(max_examples=500, deadline=None)
@given(valid_documents())
def test_the_nesting_check_of_valid_json_agrees_with_the_scan(text):
    assert _nesting_exceeds_valid(text.encode("utf-8", "surrogatepass")) is nesting_exceeds(text)


@pytest.mark.parametrize(
    "text",
    [
        "[" * MAX_DEPTH + "]" * MAX_DEPTH,
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        '["' + "[" * 500 + '"]',
        '["\\"' + "[" * 500 + '"]',
        '["\\\\",' + "[" * 70 + "]" * 70 + "]",
        '["\\\\",' + "[" * 62 + "]" * 62 + "]",
        '{"a":"' + "{" * 100 + '","b":' + "[" * 60 + "]" * 60 + "}",
        '{"a":"' + "{" * 100 + '","b":' + "[" * 70 + "]" * 70 + "}",
    ],
)
def test_the_nesting_check_of_valid_json_skips_strings_and_escapes(text):
    json.loads(text)
    assert _nesting_exceeds_valid(text.encode()) is nesting_exceeds(text)


def test_integers_beyond_64_bits_stay_exact():
    body = b'{"big": 123456789012345678901234567890, "edge": 18446744073709551616}'

    value = json_body(body, limit=LIMIT, declared=len(body), encoding="utf-8")

    assert value == {"big": 123456789012345678901234567890, "edge": 18446744073709551616}
    assert all(type(number) is int for number in value.values())
