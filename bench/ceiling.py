"""The lean ceiling: the work of two API requests done with no framework, for the bench to
serve with the API server's own server and settings (bench/ceiling_front.py, and on
granian's WSGI interface for comparison: `CeilingServer` in bench/harness.py).

- `POST /events`: the key checked against the one held in memory, the body parsed with
  orjson and checked for a non-empty `event`, the API's single-event INSERT (the same
  columns, conflict clause and `RETURNING id` as events/services/ingest.py) prepared and
  autocommitted, and the API's 202 envelope.
- `GET /project`: the key checked, one prepared SELECT of the key's project row, and the
  API's 200 envelope of it (id, name, team_id, policies, created_at, updated_at).
- `GET /health`: 200 without the database, for the harness to know the server is up.

Anything else is a 404 envelope. What the API does besides (key lookup in a cache, usage
metering, the rate limiter, the wake-up of the event workers, Django and DRF) is what the
API's line pays over this one's. No Django here: the module must stay importable, and
cheap, without settings.

Environment: `DATABASE_URL` (the bench database), `CEILING_KEYS` (a JSON object from key to
project id) and `CEILING_THREADS` (the server's blocking threads per worker: the size of
each worker's connection pool).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from psycopg_pool import ConnectionPool

# The API's single-event INSERT (events/services/ingest.py `_INSERT_ONE`), written out:
# this module imports nothing of the service.
INSERT_ONE = (
    "WITH v AS (SELECT %s::uuid AS id, %s::uuid AS project_id, "
    "%s::varchar AS key, %s::timestamptz AS now), "
    "keyed AS (INSERT INTO events_eventkey (event_id, project_id, idempotency_key, created_at) "
    "SELECT v.id, v.project_id, v.key, v.now FROM v WHERE v.key IS NOT NULL "
    "ON CONFLICT (project_id, idempotency_key) DO NOTHING RETURNING event_id) "
    "INSERT INTO events_event (id, project_id, event, source, email, external_id, "
    "contact_ref, payload, occurred_at, idempotency_key, status, attempts, next_attempt_at, "
    "last_error, error_code, created_at) "
    "SELECT v.id, v.project_id, %s, 'customer', %s, %s, %s, %s::jsonb, %s, v.key, "
    "'accepted', 0, v.now, '', '', v.now FROM v "
    "WHERE v.key IS NULL OR EXISTS (SELECT FROM keyed) RETURNING id"
)
POLICIES = (
    "event_payload_limit_bytes",
    "contact_fields_limit_bytes",
    "event_retention_days",
    "run_retention_days",
    "wait_retention_days",
    "prepared_action_ttl_seconds",
    "email_normalization",
    "default_from",
    "track_opens",
    "track_clicks",
    "event_retry_base_seconds",
    "event_retry_factor",
    "event_retry_cap_seconds",
    "event_retry_max_attempts",
)
SELECT_PROJECT = (
    f"SELECT id, name, team_id, {', '.join(POLICIES)}, created_at, updated_at "
    "FROM tenancy_project WHERE id = %s"
)

KEYS: dict[str, uuid.UUID] = {
    key: uuid.UUID(project_id)
    for key, project_id in orjson.loads(os.environ.get("CEILING_KEYS", "{}")).items()
}
THREADS = int(os.environ.get("CEILING_THREADS", "2"))

StartResponse = Callable[..., Any]

_pool: ConnectionPool | None = None
_pool_lock = threading.Lock()


def _connections() -> ConnectionPool:
    """This worker's pool, opened on its first request (after granian started the worker
    process), one connection per blocking thread, autocommit as the API commits each
    request."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ConnectionPool(
                    os.environ["DATABASE_URL"],
                    min_size=THREADS,
                    max_size=THREADS,
                    kwargs={"autocommit": True},
                    open=True,
                )
    return _pool


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _answer(start_response: StartResponse, status: int, body: dict[str, Any]) -> list[bytes]:
    raw = orjson.dumps(body)
    start_response(
        _STATUS[status],
        [("Content-Type", "application/json"), ("Content-Length", str(len(raw)))],
    )
    return [raw]


def _error(start_response: StartResponse, status: int, code: str, message: str) -> list[bytes]:
    body = {
        "status": status,
        "error": {"code": code, "message": message, "details": "", "issues": []},
    }
    return _answer(start_response, status, body)


_STATUS = {
    200: "200 OK",
    202: "202 Accepted",
    400: "400 Bad Request",
    401: "401 Unauthorized",
    404: "404 Not Found",
}


def _ingest(
    environ: dict[str, Any], start_response: StartResponse, project_id: uuid.UUID
) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    try:
        raw = orjson.loads(environ["wsgi.input"].read(length))
    except orjson.JSONDecodeError:
        return _error(start_response, 400, "invalid_json", "The body is not JSON.")
    event = raw.get("event") if isinstance(raw, dict) else None
    if not isinstance(event, str) or not event:
        return _error(start_response, 400, "validation_error", "`event` must be a string.")
    email = raw.get("email")
    payload = raw.get("payload")
    payload_json = orjson.dumps(payload).decode() if isinstance(payload, dict) else "{}"
    now = dt.datetime.now(dt.UTC)
    new_id = uuid.uuid4()
    with _connections().connection() as conn:
        row = conn.execute(
            INSERT_ONE,
            (new_id, project_id, None, now, event, email, None, None, payload_json, now),
            prepare=True,
        ).fetchone()
    data = {
        "id": str(new_id),
        "event": event,
        "idempotency_key": None,
        "status": "accepted",
        "received_at": _iso(now),
        "duplicate": row is None,
    }
    return _answer(start_response, 202, {"status": 202, "data": data})


def _project(start_response: StartResponse, project_id: uuid.UUID) -> list[bytes]:
    with _connections().connection() as conn:
        row = conn.execute(SELECT_PROJECT, (project_id,), prepare=True).fetchone()
    if row is None:
        return _error(start_response, 404, "not_found", "No such project.")
    policies = dict(zip(POLICIES, row[3:-2], strict=True))
    policies["default_from"] = policies["default_from"] or None
    data = {
        "id": str(row[0]),
        "name": row[1],
        "team_id": str(row[2]),
        "policies": policies,
        "created_at": _iso(row[-2]),
        "updated_at": _iso(row[-1]),
    }
    return _answer(start_response, 200, {"status": 200, "data": data})


def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
    if path == "/health":
        return _answer(start_response, 200, {"status": 200, "data": {"ok": True}})
    if (method, path) not in (("POST", "/events"), ("GET", "/project")):
        return _error(start_response, 404, "not_found", "No such endpoint.")
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    project_id = KEYS.get(authorization[7:]) if authorization.startswith("Bearer ") else None
    if project_id is None:
        return _error(start_response, 401, "unauthenticated", "A valid key is required.")
    if method == "POST":
        return _ingest(environ, start_response, project_id)
    return _project(start_response, project_id)
