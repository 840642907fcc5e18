"""A direct tool call's result is what the SDK's per-version sieve makes of it: the sieve
of a result's shape, with its text and structured content put in place, equals the sieve
of the whole result, for every protocol version and every shape the endpoint answers."""

import json

import pytest
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from agent.direct import TOOLS_CALL, _result, result_sieved

STRUCTURED = [
    None,
    {},
    {
        "id": "0e5b3c7e-8f1a-4c2d-9b6e-2f4a1d3c5b7a",
        "email": "ada@example.com",
        "fields": {"plan": None, "tags": ["a", None, {"deep": [None, 1.5, -0.0]}]},
        "count": 2**63 + 1,
        "ratio": 1e-300,
        "ok": False,
        "text": 'naïve \u2028 "quoted" \\ \x00',
        "empty": [],
    },
    {"items": [{"id": 1}, {"id": 2}], "metadata": {"next_cursor": None, "has_more": False}},
    {"code": "validation_error", "message": "Bad.", "details": "", "issues": []},
]


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS])
@pytest.mark.parametrize("is_error", [False, True])
@pytest.mark.parametrize("structured", STRUCTURED)
def test_the_shape_sieved_once_gives_what_the_sieve_gives_the_whole_result(
    version, is_error, structured
):
    text = json.dumps(structured)
    whole = _result(text, structured, is_error=is_error, modern=version in MODERN_PROTOCOL_VERSIONS)

    expected = methods.serialize_server_result(TOOLS_CALL, version, whole)

    assert result_sieved(version, text, structured, is_error=is_error) == expected
    # Again, from the shape now kept.
    assert result_sieved(version, text, structured, is_error=is_error) == expected
