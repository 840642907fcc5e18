"""The JSON request parser: a bounded body, bounded nesting, strict numbers, clean errors."""

import codecs
import functools
import json
import re
import zlib
from collections.abc import Mapping
from itertools import accumulate
from typing import IO, Any

import orjson
from django.conf import settings
from django.http import HttpRequest
from rest_framework.parsers import BaseParser

from config.api.errors import InvalidJson, RequestTooLarge, UnsupportedMediaType

# Deeper JSON is refused before any code sees the value: the standard decoder and
# everything that walks a value recurse, and a few thousand levels exhaust the stack (a
# 500) for no real document. orjson, which bounds its own depth (1,024 levels, then it
# refuses), may read a body first; the standard decoder reads none deeper than this.
MAX_DEPTH = 64

# A JSON string (its closing quote optional, so an unterminated one ends the text): the
# possessive quantifiers keep the scan linear on any input.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def nesting_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects in `text` nest deeper than `limit` (strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii")
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


# For `_nesting_exceeds_valid`: every byte but quotes and brackets, deleted.
_NOT_STRUCTURAL = bytes(byte for byte in range(256) if byte not in b'"[]{}')
_CURLY_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
# Every ASCII digit read as `0`, every other byte as a space: a run of digits as a run of `0`.
_DIGITS_AS_ZEROS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
# orjson reads an integer beyond 64 bits as a float, where the standard library keeps it
# exact; such an integer has at least this many digits.
_LONG_DIGITS = b"0" * 19


def _nesting_exceeds_valid(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """`nesting_exceeds` for a body known to be valid JSON, in bytes operations alone (the
    scan above costs a regular expression pass over the whole text, a millisecond for a
    batch of events). In valid JSON a backslash occurs only in strings, and its runs pair
    from the left, so dropping escaped backslashes and then escaped quotes leaves quotes
    that only open and close strings; of the quotes and brackets, strings are then `""`
    unless they hold brackets, and dropping `""` left to right leaves no quote exactly
    when none does (the first string with brackets keeps its opening quote)."""
    structure = raw.translate(None, _NOT_STRUCTURAL)
    if structure.count(b"[") + structure.count(b"{") <= limit:
        return False
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
        structure = raw.translate(None, _NOT_STRUCTURAL)
    brackets = structure.replace(b'""', b"")
    if b'"' in brackets:
        # Some string holds brackets: keep what lies between strings.
        brackets = b"".join(structure.split(b'"')[::2])
    # Objects nest as arrays do. Each pass drops the innermost arrays, one level of nesting:
    # `replace` does not look again at what its own removals bring together.
    brackets = brackets.translate(_CURLY_AS_SQUARE)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return bool(brackets)


@functools.lru_cache(maxsize=16)
def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


_SLOW = object()


def long_integers_possible(raw: bytes) -> bool:
    """Whether JSON text `raw` may hold an integer beyond 64 bits (a run of 19 digits),
    which orjson reads as a float where the standard library and pydantic keep it exact:
    a reader that must read as they do leaves such a body to them."""
    return _LONG_DIGITS in raw.translate(_DIGITS_AS_ZEROS)


def _orjson_body(raw: bytes) -> Any:
    """The body read by orjson (several times faster than the standard library's reader),
    or _SLOW when only the standard library's reading says what the body holds: orjson
    refuses (then the standard library refuses too, or reads what orjson cannot carry:
    lone surrogates, numbers past a float's range, which the checks of the values answer
    for) or a run of 19 digits could be an integer beyond 64 bits, which orjson would
    read as a float. Everything orjson reads otherwise it reads as the standard library
    does."""
    if long_integers_possible(raw):
        return _SLOW
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _SLOW
    if _nesting_exceeds_valid(raw):
        raise InvalidJson(details=f"Arrays and objects nest deeper than {MAX_DEPTH} levels.")
    return value


def body_limit(parser_context: Mapping[str, Any]) -> int:
    """The largest body the view accepts: its `max_body_bytes`, else Django's upload limit."""
    limit = getattr(parser_context.get("view"), "max_body_bytes", None)
    return int(limit or settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def _too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge(details=f"This endpoint accepts bodies of up to {limit} bytes.")


def _reject_constant(name: str) -> Any:
    raise InvalidJson(details=f"`{name}` is not a JSON number.")


class JsonParser(BaseParser):
    """`application/json` bodies. Not a subclass of DRF's JSONParser, which DRF hands the
    whole body under Django's one global limit; this one applies the view's own."""

    media_type = "application/json"

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        context = parser_context or {}
        limit = body_limit(context)
        request = context.get("request")
        meta = getattr(request, "META", {})
        try:
            declared = int(meta.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            raise _too_large(limit)
        raw = stream.read(limit + 1) if stream is not None else b""
        django_request = getattr(request, "_request", None)
        if (
            len(raw) <= limit
            and isinstance(django_request, HttpRequest)
            and not hasattr(django_request, "_body")
        ):
            # Read from the request itself: as after DRF's own JSON parser, `request.body`
            # still gives the bytes (to hash a body, check a signature); Django caches them
            # there itself.
            django_request._body = raw
        encoding = context.get("encoding") or settings.DEFAULT_CHARSET
        return json_body(raw, limit=limit, declared=declared, encoding=encoding)


class GzipJsonParser(JsonParser):
    """`application/json` bodies, also sent with `Content-Encoding: gzip` (Segment's
    clients may compress). The view's limit bounds the body both as sent and inflated, so
    a small compressed body cannot expand past it; another encoding is 415."""

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        context = parser_context or {}
        meta = getattr(context.get("request"), "META", {})
        encoding = meta.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if encoding in ("", "identity"):
            return super().parse(stream, media_type, parser_context)
        if encoding != "gzip":
            raise UnsupportedMediaType(
                "The body's content encoding is not supported here.",
                details="Send it as is, or with `Content-Encoding: gzip`.",
            )
        limit = body_limit(context)
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise _too_large(limit)
        inflater = zlib.decompressobj(wbits=31)
        try:
            body = inflater.decompress(raw, limit + 1)
        except zlib.error:
            raise InvalidJson(details="The body is not valid gzip data.") from None
        if len(body) > limit or inflater.unconsumed_tail:
            raise _too_large(limit)
        if not inflater.eof:
            raise InvalidJson(details="The gzip data ends early.")
        charset = context.get("encoding") or settings.DEFAULT_CHARSET
        return json_body(body, limit=limit, declared=0, encoding=charset)


def json_body(raw: bytes, *, limit: int, declared: int, encoding: str) -> Any:
    """A JSON body as every API endpoint reads it (the DRF parser above and the lean path,
    config/api/lean.py): at most `limit` bytes, text in `encoding`, nested at most
    MAX_DEPTH deep, strict numbers; InvalidJson or RequestTooLarge otherwise."""
    if declared > limit or len(raw) > limit:
        raise _too_large(limit)
    try:
        # Text codecs only: bytes-to-bytes ones (`bz2_codec`) would inflate the body
        # past the limit checked above.
        "".encode(encoding)
    except (LookupError, UnicodeError):
        raise InvalidJson(details="The Content-Type names a charset that is not text.") from None
    if _is_utf8(encoding):
        value = _orjson_body(raw)
        if value is not _SLOW:
            return value
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        raise InvalidJson(details=f"The body is not valid {encoding} text.") from None
    if nesting_exceeds(text):
        raise InvalidJson(details=f"Arrays and objects nest deeper than {MAX_DEPTH} levels.")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidJson(details=f"Line {exc.lineno}, column {exc.colno}.") from None
    except RecursionError:  # pragma: no cover - the depth bound comes first
        raise InvalidJson(
            details=f"Arrays and objects nest deeper than {MAX_DEPTH} levels."
        ) from None
