"""Cursor pagination for every list: stable (created_at, id) order, signed opaque cursors."""

import datetime as dt
import hashlib
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.core import signing
from django.db.models import Model, Q, QuerySet
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from config.api.envelope import enveloped
from config.api.errors import Issue, ValidationFailed

_Row = TypeVar("_Row", bound=Model)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
_SIGNER = signing.Signer(salt="api.cursor")


def cursor_scope(request: Request) -> str:
    """What a cursor is bound to: the list (its path, any-case ids lower-cased) and the
    project it was read in (or, outside projects, the key). A digest: cursors stay short
    and do not show the ids."""
    project = getattr(request, "project", None)
    owner = getattr(project, "id", None) or getattr(request.auth, "id", None) or ""
    bound = f"{request.path.lower()}|{owner}"
    return hashlib.blake2b(bound.encode("utf-8", "replace"), digest_size=9).hexdigest()


def encode_cursor(created_at: dt.datetime, pk: Any, *, scope: str = "") -> str:
    return _SIGNER.sign_object([scope, created_at.isoformat(), str(pk)], compress=False)


def decode_cursor(cursor: str, *, scope: str = "") -> tuple[dt.datetime, str]:
    """The position a cursor holds; 400 at `after` for one not issued for this `scope`."""
    try:
        issued_for, created_at, pk = _SIGNER.unsign_object(cursor)
        if issued_for != scope:
            raise ValueError("another list's cursor")
        return dt.datetime.fromisoformat(created_at), pk
    except (signing.BadSignature, ValueError, TypeError):
        raise ValidationFailed(
            "The cursor is not valid.",
            issues=[
                Issue(code="invalid_cursor", path="after", message="Use metadata.next as given.")
            ],
        ) from None


def parse_limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed.at(
            "limit", f"Must be an integer from 1 to {MAX_LIMIT}.", code="out_of_range"
        )
    return limit


def _serialized(
    serialize: type[BaseSerializer[Any]] | Callable[[Sequence[_Row]], Any], rows: list[_Row]
) -> Any:
    if isinstance(serialize, type):  # a serializer class; functions are not types
        return serialize(rows, many=True).data
    return serialize(rows)


def paginate(
    request: Request,
    queryset: QuerySet[_Row],
    serialize: type[BaseSerializer[Any]] | Callable[[Sequence[_Row]], Any],
) -> Response:
    """One page of `queryset` as a list envelope with `metadata` (docs/API.md, Foundation).

    `serialize` is an output serializer class (the common case) or a callable that turns
    the page's rows into the `data` array (for pages that need more than one serializer).
    """
    limit = parse_limit(request)
    after = request.query_params.get("after")
    scope = cursor_scope(request)
    total = queryset.count()
    page_qs = queryset.order_by("created_at", "pk")
    if after is not None:
        created_at, pk = decode_cursor(after, scope=scope)
        try:
            pk_value: Any = uuid.UUID(pk)
        except ValueError:
            pk_value = pk
        page_qs = page_qs.filter(
            Q(created_at__gt=created_at) | Q(created_at=created_at, pk__gt=pk_value)
        )
    rows = list(page_qs[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    # Every paginated model has `created_at` (the order above), which Model does not declare.
    last: Any = rows[-1] if has_more else None
    next_cursor = encode_cursor(last.created_at, last.pk, scope=scope) if has_more else None
    body = {
        "status": 200,
        "data": _serialized(serialize, rows),
        "metadata": {
            "total": total,
            "items": len(rows),
            "limit": limit,
            "after": after,
            "next": next_cursor,
            "has_more": has_more,
        },
    }
    return enveloped(body, status=200)
