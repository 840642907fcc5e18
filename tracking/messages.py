"""Segment messages read into what the native services take: every message is an event
(events.validation's `EventInput`, checked by the native parser), and identify, group and
alias carry what their contact change needs. The mapping is CONTRACT section 18's and
docs/API.md's, Segment-compatible ingest."""

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from config.api.errors import Issue, ServiceError, ValidationFailed
from config.api.jsonvalues import stored_json_issues
from events.conf import MAX_EXTERNAL_ID_LENGTH, MAX_IDEMPOTENCY_KEY_LENGTH
from events.models import SYSTEM_PREFIX
from events.validation import EventInput, event_input_parse, timestamp_parsed
from tenancy.models import Project
from tracking.errors import MessageTooLarge

CALLS = ("track", "identify", "page", "screen", "group", "alias")
# Segment's own limits: a message, and a batch body.
MESSAGE_MAX_BYTES = 32 * 1024
BATCH_MAX_BYTES = 500 * 1024
# An audience's name (the group's key) and a property's key, as the audiences store them.
MAX_GROUP_ID_LENGTH = 200
MAX_PROPERTY_KEY_LENGTH = 64

# Runs of characters the event name rule does not allow (dots separate its parts).
_OTHER = re.compile(r"[^a-z0-9.]+")
# An ISO 8601 date or date-time with an offset: a trait that becomes a `date` property.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?")


@dataclass(slots=True)
class Message:
    """One valid Segment message: the event it is kept as, and its contact change."""

    call: str
    event: EventInput
    user_id: str | None
    email: str | None
    # identify: the traits other than `email` (contact fields); group: the traits kept
    # as membership properties.
    traits: dict[str, Any]
    group_id: str | None = None
    previous_id: str | None = None
    # group: the type of each membership property the traits need (key -> PropertyType).
    property_types: dict[str, str] | None = None


# Pure and keyed by its whole input: an app sends the same few names over and over.
@functools.lru_cache(maxsize=4096)
def event_name_map(name: str) -> str:
    """A Segment event name under the native name rule: lower-cased, every run of other
    characters one `_`, each dot-separated part without leading or trailing `_`, empty
    parts dropped (`Order Completed` -> `order_completed`); "" when nothing is left."""
    parts = (part.strip("_") for part in _OTHER.sub("_", name.lower()).split("."))
    return ".".join(part for part in parts if part)


# The checks below take a member's place as the message's prefix and the member's name,
# and join them only for an issue: a valid message (nearly every one) makes no paths.


def _identifier(
    value: Any,
    prefix: str,
    member: str,
    issues: list[Issue],
    *,
    max_length: int = MAX_EXTERNAL_ID_LENGTH,
) -> str | None:
    """Segment ids are strings or numbers; "" and null mean absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        issues.append(Issue("invalid_type", prefix + member, "Must be a string or a number."))
        return None
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > max_length or "\x00" in text:
        issues.append(
            Issue(
                "invalid",
                prefix + member,
                f"Must be at most {max_length} characters, without NUL.",
            )
        )
        return None
    return text


def _object(value: Any, prefix: str, member: str, issues: list[Issue]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        issues.append(Issue("invalid_type", prefix + member, "Must be a JSON object."))
        return {}
    return value


def _timestamp(value: Any, prefix: str, member: str, issues: list[Issue]) -> dt.datetime | None:
    return None if value is None else timestamp_parsed(value, prefix + member, issues)


def _occurred_at(
    timestamp: dt.datetime | None,
    sent_at: dt.datetime | None,
    received_at: dt.datetime,
    prefix: str,
    issues: list[Issue],
) -> dt.datetime | None:
    """Segment's clock-skew correction: a device's `timestamp` moved by how far its clock
    (`sentAt`) is from ours at receipt. Without `sentAt` the timestamp is taken as it is;
    without a timestamp the event occurred at receipt (None)."""
    if timestamp is None:
        return None
    try:
        if sent_at is None:
            return timestamp.astimezone(dt.UTC)
        return (timestamp + (received_at - sent_at)).astimezone(dt.UTC)
    except OverflowError:
        issues.append(
            Issue(
                "invalid_timestamp",
                f"{prefix}timestamp",
                "Must be a time between years 1 and 9999.",
            )
        )
        return None


def _property_types(traits: dict[str, Any], path: str, issues: list[Issue]) -> dict[str, str]:
    """The membership property type each group trait needs; nested values are not kept."""
    types: dict[str, str] = {}
    for key, value in traits.items():
        if len(key) > MAX_PROPERTY_KEY_LENGTH:
            issues.append(
                Issue(
                    "too_long",
                    f"{path}.{key}",
                    f"Trait keys are at most {MAX_PROPERTY_KEY_LENGTH} characters.",
                )
            )
        elif isinstance(value, bool):
            types[key] = "boolean"
        elif isinstance(value, (int, float)):
            types[key] = "number"
        elif isinstance(value, str):
            types[key] = "date" if _DATE.fullmatch(value) else "string"
    return types


# Native members and where they come from in a Segment message, for error paths.
_NATIVE_PATHS = {
    "external_id": "userId",
    "idempotency_key": "messageId",
    "occurred_at": "timestamp",
}


def _relocated(error: ServiceError, prefix: str, sources: dict[str, str]) -> ServiceError:
    """The native parser's error with its paths named as the Segment message's members."""
    moved = []
    for issue in error.issues:
        member, dot, rest = issue.path.removeprefix(prefix).partition(".")
        source = sources.get(member) or _NATIVE_PATHS.get(member) or member
        moved.append(Issue(issue.code, f"{prefix}{source}{dot}{rest}", issue.message))
    error.issues = moved
    return error


def _size(raw: dict[str, Any]) -> int:
    """Bytes of a message as compact UTF-8 JSON (orjson writes what `json` would, faster)."""
    try:
        return len(orjson.dumps(raw))
    except (TypeError, orjson.JSONEncodeError):
        # Beyond orjson (integers over 64 bits): the standard encoder measures them.
        return len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())


def message_parse(
    raw: Any,
    *,
    project: Project,
    call: str | None,
    received_at: dt.datetime,
    prefix: str = "",
    batch_context: dict[str, Any] | None = None,
    batch_sent_at: dt.datetime | None = None,
) -> Message:
    """Checks one Segment message; `call` is the endpoint's, or None in a batch (the
    message's `type` says it), and `prefix` locates the message in a batch body.

    Raises ValidationFailed (400, every problem as an issue), RequestTooLarge (413, a
    message over 32 KB in a batch) or the native parser's 422s."""
    where = prefix.rstrip(".")
    if not isinstance(raw, dict):
        raise ValidationFailed.at(where, "Expected a JSON object.", code="invalid_type")
    if call is None:
        size = _size(raw)
        if size > MESSAGE_MAX_BYTES:
            raise MessageTooLarge(
                details=f"A message may be up to {MESSAGE_MAX_BYTES} bytes; this one is {size}.",
                issues=[Issue("too_large", where, "The message is too large.")],
            )
        call = raw.get("type")
        if call not in CALLS:
            raise ValidationFailed.at(
                f"{prefix}type", f"Must be one of {', '.join(CALLS)}.", code="invalid_choice"
            )
    issues: list[Issue] = []
    context = _object(raw.get("context"), prefix, "context", issues)
    if batch_context:
        context = {**batch_context, **context}
    context_traits = _object(context.get("traits"), prefix, "context.traits", issues)
    user_id = _identifier(raw.get("userId"), prefix, "userId", issues)
    anonymous_id = _identifier(raw.get("anonymousId"), prefix, "anonymousId", issues)
    message_id = _identifier(
        raw.get("messageId"), prefix, "messageId", issues, max_length=MAX_IDEMPOTENCY_KEY_LENGTH
    )
    sent_at = _timestamp(raw.get("sentAt"), prefix, "sentAt", issues) or batch_sent_at
    timestamp = _timestamp(raw.get("timestamp"), prefix, "timestamp", issues)
    occurred_at = _occurred_at(timestamp, sent_at, received_at, prefix, issues)

    email: Any = context_traits.get("email")
    email_path = "context.traits.email"
    traits: dict[str, Any] = {}
    name = call
    payload: dict[str, Any]
    group_id = previous_id = None
    property_types = None
    if call == "track":
        properties = _object(raw.get("properties"), prefix, "properties", issues)
        payload = properties
        if email is None and properties.get("email") is not None:
            email, email_path = properties["email"], "properties.email"
        name = _track_name(raw.get("event"), prefix, issues)
    elif call in ("page", "screen"):
        properties = _object(raw.get("properties"), prefix, "properties", issues)
        if email is None and properties.get("email") is not None:
            email, email_path = properties["email"], "properties.email"
        page_name = raw.get("name")
        if page_name is not None and not isinstance(page_name, str):
            issues.append(Issue("invalid_type", f"{prefix}name", "Must be a string."))
        payload = {"name": page_name, "properties": properties}
    elif call == "identify":
        traits = _object(raw.get("traits"), prefix, "traits", issues)
        if traits.get("email") is not None:
            email, email_path = traits["email"], "traits.email"
        payload = {"traits": traits}
        traits = {key: value for key, value in traits.items() if key != "email"}
        issues.extend(stored_json_issues(traits, f"{prefix}traits"))
    elif call == "group":
        traits = _object(raw.get("traits"), prefix, "traits", issues)
        group_id = _identifier(
            raw.get("groupId"), prefix, "groupId", issues, max_length=MAX_GROUP_ID_LENGTH
        )
        if group_id is None and not any(issue.path == f"{prefix}groupId" for issue in issues):
            issues.append(Issue("required", f"{prefix}groupId", "This member is required."))
        property_types = _property_types(traits, f"{prefix}traits", issues)
        # Nested values have no property type: they stay in the event's payload only.
        traits = {k: v for k, v in traits.items() if v is None or k in property_types}
        payload = {"groupId": group_id, "traits": raw.get("traits") or {}}
    else:  # alias
        previous_id = _identifier(raw.get("previousId"), prefix, "previousId", issues)
        for member, value in (("previousId", previous_id), ("userId", user_id)):
            if value is None and not any(i.path == f"{prefix}{member}" for i in issues):
                issues.append(Issue("required", f"{prefix}{member}", "This member is required."))
        payload = {"previousId": previous_id, "userId": user_id}
        # An alias names two users: its event is kept without an identity.
        email = None
    identity = None if call == "alias" else user_id
    if identity is None and email is None and call != "alias":
        if anonymous_id is None:
            issues.append(
                Issue("identity_required", where, "Give `userId` or `anonymousId` (or an email).")
            )
        payload = {**payload, "anonymousId": anonymous_id}
    if issues:
        raise ValidationFailed(issues=issues)

    native = {
        "event": name,
        "external_id": identity,
        "email": email,
        "payload": payload,
        "idempotency_key": message_id,
    }
    payload_source = {"track": "properties", "identify": "traits"}.get(call, "")
    try:
        item = event_input_parse(native, project=project, prefix=prefix, anonymous=True)
    except ServiceError as error:
        raise _relocated(error, prefix, {"email": email_path, "payload": payload_source}) from None
    item.occurred_at = occurred_at
    return Message(
        call=call,
        event=item,
        user_id=user_id,
        email=item.email,
        traits=traits,
        group_id=group_id,
        previous_id=previous_id,
        property_types=property_types,
    )


def _track_name(value: Any, prefix: str, issues: list[Issue]) -> str:
    if value is None:
        issues.append(Issue("required", prefix + "event", "This member is required."))
        return ""
    if not isinstance(value, str):
        issues.append(Issue("invalid_type", prefix + "event", "Must be a string."))
        return ""
    name = event_name_map(value)
    if not name:
        issues.append(
            Issue("invalid_event_name", prefix + "event", "The name has no letters or digits.")
        )
    elif name.startswith(SYSTEM_PREFIX):
        issues.append(
            Issue(
                "reserved_event_name",
                prefix + "event",
                f"Names starting `{SYSTEM_PREFIX}` are reserved.",
            )
        )
    return name


def batch_parse(raw: Any) -> tuple[list[Any], dict[str, Any], Any]:
    """The messages of a `/v1/batch` body, its shared `context` and its `sentAt`."""
    if not isinstance(raw, dict):
        raise ValidationFailed.at("", "Expected a JSON object.", code="invalid_type")
    messages = raw.get("batch")
    if not isinstance(messages, list):
        raise ValidationFailed.at("batch", "Must be an array of messages.", code="invalid_type")
    if not messages:
        raise ValidationFailed.at("batch", "Send at least one message.", code="too_short")
    context = raw.get("context")
    if context is not None and not isinstance(context, dict):
        raise ValidationFailed.at("context", "Must be a JSON object.", code="invalid_type")
    return messages, context or {}, raw.get("sentAt")


def batch_sent_at(value: Any) -> dt.datetime | None:
    """A batch's `sentAt`, checked."""
    issues: list[Issue] = []
    moment = timestamp_parsed(value, "sentAt", issues)
    if issues:
        raise ValidationFailed(issues=issues)
    return moment
