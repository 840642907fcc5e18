"""What an event payload looks like, for the catalog: field types, likely personal data,
and a redacted copy. Pure functions; the catalog service stores their results."""

import functools
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

# Bounds that keep one odd payload from bloating its catalog entry.
MAX_DEPTH = 6
MAX_FIELDS = 300
MAX_EXAMPLE_ITEMS = 3

_TOKEN_ORDER = {"string": 0, "number": 1, "boolean": 2, "object": 3, "array": 4, "null": 9}

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_PHONE_E164 = re.compile(r"^\+[\d][\d\s().-]{6,20}$")
_PHONE_NANP = re.compile(r"^\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}$")
_CARD = re.compile(r"^\d(?:[ -]?\d){12,18}$")
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Single words in a field name that suggest personal data.
_PII_WORDS = frozenset(
    {
        "email",
        "emails",
        "mail",
        "phone",
        "mobile",
        "telephone",
        "tel",
        "msisdn",
        "address",
        "addr",
        "street",
        "zip",
        "zipcode",
        "postcode",
        "postal",
        "firstname",
        "lastname",
        "fullname",
        "surname",
        "ip",
        "ipv4",
        "ipv6",
        "card",
        "pan",
        "cc",
        "iban",
        "ssn",
        "passport",
        "dob",
        "birthdate",
        "birthday",
    }
)
# `name` is personal next to these words (`first_name`), or alone; `product_name` is not.
_NAME_QUALIFIERS = frozenset(
    {
        "first",
        "last",
        "full",
        "given",
        "family",
        "middle",
        "display",
        "user",
        "customer",
        "contact",
        "person",
        "sur",
        "maiden",
        "nick",
        "real",
        "legal",
    }
)


# A name ending in one of these is a record's identifier (`email_id`, `userId`): it points
# at a record, it does not hold the person's data, so the words before it do not count.
_ID_WORDS = frozenset({"id", "ids", "uuid", "uuids"})
# ... unless the identifier is a number a person is known by (`passport_id`, `tax_id`).
_DOCUMENT_WORDS = frozenset({"ssn", "passport", "iban", "national", "tax"})


def _words(key: str) -> list[str]:
    return [word.lower() for word in _WORDS.findall(key)]


# Payloads of one event name repeat their keys: each key is judged once per process.
@functools.lru_cache(maxsize=4096)
def name_looks_personal(key: str) -> bool:
    """True for field names like `email`, `phone_number`, `shippingAddress`, `first_name`;
    false for ids of records such as `email_id` or `user_id`."""
    words = _words(key)
    if not words:
        return False
    if words[-1] in _ID_WORDS:
        return any(word in _DOCUMENT_WORDS for word in words)
    if any(word in _PII_WORDS for word in words):
        return True
    if "name" in words:
        index = words.index("name")
        return len(words) == 1 or (index > 0 and words[index - 1] in _NAME_QUALIFIERS)
    return False


def path_names_an_id(path: str) -> bool:
    """True when the last field of a catalog path (`items[].email_id`) is a record's id
    by its name alone."""
    key = path.rpartition(".")[2].removesuffix("[]")
    words = _words(key)
    return bool(words) and words[-1] in _ID_WORDS and not name_looks_personal(key)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def value_looks_personal(value: Any) -> bool:
    """True for values shaped like an email, a phone number, an IP address or a card number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        text = str(value)
        return 13 <= len(text) <= 19 and _luhn(text)
    if not isinstance(value, str) or len(value) > 320 or len(value) < 7:
        return False
    if "@" in value:
        return bool(_EMAIL.match(value))
    if _CARD.match(value):
        digits = value.replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and _luhn(digits):
            return True
    if _PHONE_E164.match(value) or _PHONE_NANP.match(value):
        return sum(char.isdigit() for char in value) >= 7
    if ("." in value or ":" in value) and len(value) <= 45:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            return False
        return True
    return False


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class Observation:
    """Types and personal-looking paths seen in one or more payloads."""

    def __init__(self) -> None:
        self.types: dict[str, set[str]] = {}
        self.pii: set[str] = set()

    def add(self, payload: Mapping[str, Any]) -> None:
        self._walk(payload, "", 0)

    def _note(self, path: str, token: str) -> None:
        if path not in self.types and len(self.types) >= MAX_FIELDS:
            return
        self.types.setdefault(path, set()).add(token)

    def _walk(self, obj: Mapping[str, Any], prefix: str, depth: int) -> None:
        for key, value in obj.items():
            path = f"{prefix}{key}"
            if name_looks_personal(str(key)) or value_looks_personal(value):
                self.pii.add(path)
            kind = _type_of(value)
            if kind == "array":
                self._array(path, value, depth)
            else:
                self._note(path, kind)
                if kind == "object" and depth + 1 < MAX_DEPTH:
                    self._walk(value, f"{path}.", depth + 1)

    def _array(self, path: str, items: list[Any], depth: int) -> None:
        if not items:
            self._note(path, "array")
        for token in self._element_tokens(path, items, depth):
            self._note(path, f"array<{token}>")

    def _element_tokens(self, path: str, items: list[Any], depth: int) -> set[str]:
        """One token per element type; a nested array's carries its own elements
        (`array<number>`; `array` alone when only ever empty), so a path of arrays of
        arrays renders as `array<array<number>>`."""
        tokens: set[str] = set()
        for item in items:
            kind = _type_of(item)
            if kind == "array":
                inner = (
                    self._element_tokens(f"{path}[]", item, depth + 1)
                    if depth + 1 < MAX_DEPTH
                    else set()
                )
                tokens.update({f"array<{token}>" for token in inner} if inner else {"array"})
                continue
            tokens.add(kind)
            if kind == "object" and depth + 1 < MAX_DEPTH:
                self._walk(item, f"{path}[].", depth + 1)
            elif value_looks_personal(item):
                self.pii.add(path)
        return tokens


def merge_types(
    stored: Mapping[str, Iterable[str]], observed: Mapping[str, Iterable[str]]
) -> dict[str, list[str]]:
    """The union of two field-type maps, bounded to MAX_FIELDS paths (first seen stay)."""
    merged = {path: set(tokens) for path, tokens in stored.items()}
    for path, tokens in observed.items():
        if path not in merged and len(merged) >= MAX_FIELDS:
            continue
        merged.setdefault(path, set()).update(tokens)
    return {path: sorted(tokens) for path, tokens in merged.items()}


def _render_tokens(tokens: Iterable[str]) -> str:
    plain: set[str] = set()
    elements: set[str] = set()
    empty_array = False
    for kind in tokens:
        if kind == "array":
            empty_array = True
        elif kind.startswith("array<"):
            elements.add(kind[6:-1])
        else:
            plain.add(kind)
    parts = sorted(plain, key=lambda t: (_TOKEN_ORDER.get(t, 5), t))
    if elements:
        # Element tokens are rendered the same way, so nested arrays merge level by level.
        parts.append(f"array<{_render_tokens(elements)}>")
    elif empty_array:
        parts.append("array<unknown>")
    parts.sort(key=lambda t: _TOKEN_ORDER.get(t.split("<", 1)[0], 5))
    return "|".join(parts)


def schema_hint(field_types: Mapping[str, Iterable[str]]) -> str:
    """The catalog's `schema_hint`: a JSON string mapping each field path to its type(s)."""
    rendered = {path: _render_tokens(tokens) for path, tokens in sorted(field_types.items())}
    return json.dumps(rendered, separators=(",", ":"))


def redact(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that keeps its shape but none of its data."""
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return "<object>"
        return {key: redact(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, depth + 1) for item in value[:MAX_EXAMPLE_ITEMS]]
    if value is None:
        return None
    return f"<{_type_of(value)}>"
