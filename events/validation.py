"""Validation of event submissions, written by hand: it runs on every ingest, and a
serializer per item cost more than the insert. Errors are the envelope's (docs/API.md)."""

import datetime as dt
import functools
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, cast

import orjson

from config.api.errors import Issue, ServiceError, ValidationFailed
from contacts.normalization import normalise_email
from events.conf import (
    MAX_BATCH_ITEMS,
    MAX_EXTERNAL_ID_LENGTH,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_NAME_LENGTH,
)
from events.errors import PayloadTooLarge, ReservedEventName
from events.models import SYSTEM_PREFIX
from tenancy.models import Project

NAME_PATTERN = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*(\.[a-z0-9]+(_[a-z0-9]+)*)*$")
MEMBERS = frozenset(
    {"event", "email", "contact_id", "external_id", "payload", "occurred_at", "idempotency_key"}
)
_NUL = "\\u0000"


@dataclass(slots=True)
class EventInput:
    """One valid submission, ready to insert; the payload is already serialised."""

    event: str
    email: str | None
    external_id: str | None
    contact_ref: uuid.UUID | None
    payload_json: str
    occurred_at: dt.datetime | None
    idempotency_key: str | None


def _text(
    value: Any, path: str, issues: list[Issue], *, max_length: int, required: bool = False
) -> str | None:
    if value is None:
        if required:
            issues.append(Issue("required", path, "This member is required."))
        return None
    if type(value) is str and 0 < len(value) <= max_length and value.isprintable():
        # The common case in one test: printable text has no NUL and encodes as UTF-8.
        return value
    if not isinstance(value, str):
        issues.append(Issue("invalid_type", path, "Must be a string."))
        return None
    if not value:
        issues.append(Issue("blank", path, "Must not be empty."))
        return None
    if len(value) > max_length:
        issues.append(Issue("too_long", path, f"Must be at most {max_length} characters."))
        return None
    if "\x00" in value or (not value.isprintable() and not _encodable(value)):
        issues.append(Issue("invalid_characters", path, "Contains characters not allowed."))
        return None
    return value


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _name_valid(name: str) -> bool:
    """Whether a name that is not reserved follows the name rule; names repeat from event to
    event (a batch often holds one or two), so each is matched once."""
    return len(name) <= MAX_NAME_LENGTH and NAME_PATTERN.fullmatch(name) is not None


@functools.lru_cache(maxsize=4096)
def _email_normalised(email: str, policy: str) -> str | None:
    """`normalise_email` of `email` under `policy`, None for an invalid address: a pure
    function of both, kept for the addresses that come again (a batch's events often name
    a few contacts)."""
    try:
        return normalise_email(email, policy=policy)
    except ValueError:
        return None


def _payload_serialised(payload: dict[str, Any], limit: int) -> str | None:
    """The payload as compact JSON by orjson, when that settles the checks below as the
    standard library's serialisation would; None otherwise (the checks then serialise
    it so). orjson writes strings, integers and nesting as `json.dumps` with
    `separators=(",", ":")` and `ensure_ascii=False` does, and floats as short or shorter
    by one character only where its exponent is negative (`1e-7` for `1e-07`), so under
    the limit counted with one more byte per `e-` the payload is under it either way. It
    refuses what the standard library refuses (integers beyond 64 bits: exact there, lone
    surrogates), but writes NaN and infinities as `null`, which the standard library
    refuses: a payload with `null` in it takes the standard library's way."""
    try:
        serialised = orjson.dumps(payload)
    except orjson.JSONEncodeError:
        return None
    if b"null" in serialised or len(serialised) + serialised.count(b"e-") > limit:
        return None
    return serialised.decode()


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def timestamp_parsed(value: Any, path: str, issues: list[Issue]) -> dt.datetime | None:
    """An ISO 8601 timestamp with its offset, in UTC; None (with an issue at `path` unless
    the value was null) otherwise."""
    if value is None:
        return None
    if not isinstance(value, str):
        issues.append(Issue("invalid_type", path, "Must be an ISO 8601 timestamp string."))
        return None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        issues.append(Issue("invalid_timestamp", path, "Must be an ISO 8601 timestamp."))
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        issues.append(
            Issue("invalid_timestamp", path, "Must include a time zone offset, e.g. `Z`.")
        )
        return None
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        # Year 1 or 9999 with an offset that carries it past the calendar's ends.
        issues.append(Issue("invalid_timestamp", path, "Must be a time between years 1 and 9999."))
        return None


def event_input_parse(
    raw: Any, *, project: Project, prefix: str = "", anonymous: bool = False
) -> EventInput:
    """Checks one submission against docs/API.md, Events; `prefix` locates it in a batch.
    With `anonymous` an event without identity is valid (Segment's anonymous messages,
    tracking/): it is processed without a contact.

    Raises ValidationFailed (400, every problem as an issue), then ReservedEventName or
    PayloadTooLarge (422).
    """
    if not isinstance(raw, dict):
        raise ValidationFailed.at(
            prefix.rstrip("."), "Expected a JSON object.", code="invalid_type"
        )
    issues: list[Issue] = []
    if not raw.keys() <= MEMBERS:
        for name in sorted(raw.keys() - MEMBERS):
            issues.append(Issue("unknown_member", f"{prefix}{name}", "Unknown member."))

    name = raw.get("event")
    reserved = False
    if name is None:
        issues.append(Issue("required", f"{prefix}event", "This member is required."))
    elif not isinstance(name, str):
        issues.append(Issue("invalid_type", f"{prefix}event", "Must be a string."))
    elif name.startswith(SYSTEM_PREFIX):
        reserved = True
    elif not _name_valid(name):
        issues.append(
            Issue(
                "invalid_event_name",
                f"{prefix}event",
                "Use lower-case letters and digits in dot-separated parts, underscores "
                f"inside a part, at most {MAX_NAME_LENGTH} characters (e.g. `order.completed`).",
            )
        )

    email = raw.get("email")
    normalised: str | None = None
    if email is not None:
        if not isinstance(email, str):
            issues.append(Issue("invalid_type", f"{prefix}email", "Must be a string."))
        else:
            normalised = _email_normalised(email, project.email_normalization)
            if normalised is None:
                issues.append(
                    Issue("invalid_email", f"{prefix}email", "Must be a valid email address.")
                )

    contact_ref: uuid.UUID | None = None
    contact_id = raw.get("contact_id")
    if contact_id is not None:
        try:
            contact_ref = uuid.UUID(contact_id) if isinstance(contact_id, str) else None
        except ValueError:
            contact_ref = None
        if contact_ref is None:
            issues.append(
                Issue("invalid_uuid", f"{prefix}contact_id", "Must be a contact id (a UUID).")
            )

    raw_external_id = raw.get("external_id")
    external_id = (
        None
        if raw_external_id is None
        else _text(
            raw_external_id, f"{prefix}external_id", issues, max_length=MAX_EXTERNAL_ID_LENGTH
        )
    )
    if not anonymous and contact_id is None and raw_external_id is None and email is None:
        issues.append(
            Issue(
                "identity_required",
                prefix.rstrip("."),
                "Give at least one of `contact_id`, `external_id` or `email`.",
            )
        )

    raw_key = raw.get("idempotency_key")
    idempotency_key = (
        None
        if raw_key is None
        else _text(
            raw_key, f"{prefix}idempotency_key", issues, max_length=MAX_IDEMPOTENCY_KEY_LENGTH
        )
    )
    raw_occurred_at = raw.get("occurred_at")
    occurred_at = (
        None
        if raw_occurred_at is None
        else timestamp_parsed(raw_occurred_at, f"{prefix}occurred_at", issues)
    )

    payload = raw.get("payload")
    payload_json = "{}"
    if payload is not None:
        if not isinstance(payload, dict):
            issues.append(Issue("invalid_type", f"{prefix}payload", "Must be a JSON object."))
        else:
            fast = _payload_serialised(payload, project.event_payload_limit_bytes)
            if fast is not None:
                # Under the limit, as _payload_serialised checked.
                payload_json, size = fast, 0
            else:
                try:
                    payload_json = json.dumps(
                        payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False
                    )
                    size = len(payload_json.encode("utf-8"))
                except (ValueError, UnicodeEncodeError):
                    issues.append(
                        Issue(
                            "invalid_value",
                            f"{prefix}payload",
                            "Holds a number or text JSON cannot carry.",
                        )
                    )
                    size = 0
            if _NUL in payload_json and _has_nul(payload):
                issues.append(
                    Issue(
                        "invalid_characters",
                        f"{prefix}payload",
                        "Text must not contain NUL characters.",
                    )
                )
            if not issues and size > project.event_payload_limit_bytes:
                raise PayloadTooLarge(
                    details=(
                        f"The payload is {size} bytes serialised; this project allows "
                        f"{project.event_payload_limit_bytes}."
                    ),
                    issues=[
                        Issue("payload_too_large", f"{prefix}payload", "The payload is too large.")
                    ],
                )
    if issues:
        raise ValidationFailed(issues=issues)
    if reserved:
        raise ReservedEventName(
            issues=[Issue("reserved_event_name", f"{prefix}event", "This name is reserved.")]
        )
    assert isinstance(name, str)
    return EventInput(
        event=name,
        email=normalised,
        external_id=external_id,
        contact_ref=contact_ref,
        payload_json=payload_json,
        occurred_at=occurred_at,
        idempotency_key=idempotency_key,
    )


def batch_items_parse(raw: Any) -> list[Any]:
    """The `events` list of a batch body; the body itself is strict like every write."""
    if not isinstance(raw, dict):
        raise ValidationFailed.at("", "Expected a JSON object.", code="invalid_type")
    issues = [
        Issue("unknown_member", name, "Unknown member.") for name in sorted(raw.keys() - {"events"})
    ]
    items = raw.get("events")
    if items is None:
        issues.append(Issue("required", "events", "This member is required."))
    elif not isinstance(items, list):
        issues.append(Issue("invalid_type", "events", "Must be an array of events."))
    elif not items:
        issues.append(Issue("too_short", "events", "Send at least one event."))
    elif len(items) > MAX_BATCH_ITEMS:
        issues.append(
            Issue(
                "too_long",
                "events",
                f"At most {MAX_BATCH_ITEMS} events per batch; send more batches.",
            )
        )
    if issues:
        raise ValidationFailed(issues=issues)
    # Without issues, `items` is a non-empty list (each other case added one above).
    return cast("list[Any]", items)


def error_object(error: ServiceError) -> dict[str, Any]:
    """A rejected batch item's `error`: the error object of the envelope (docs/API.md)."""
    return {
        "code": error.code,
        "message": error.message,
        "details": error.details,
        "issues": [issue.as_dict() for issue in error.issues],
    }
