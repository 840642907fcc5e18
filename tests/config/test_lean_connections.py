"""The lean path (config/api/lean.py) tidies database connections as Django's handler does:
a connection the server dropped is replaced by the next request, so the service heals
after a database restart, a failover or a pooler's cut; and the statements it runs
(config/db/bulk.py, which keeps a cursor with each connection) move to the new one."""

import io
from typing import Any

import psycopg
import pytest
from django.core.signals import request_finished, request_started
from django.db import connection, connections
from django.db.utils import DEFAULT_DB_ALIAS

from config.api.lean import LeanFront
from config.db.cursor import statement_cursor

pytestmark = pytest.mark.django_db(transaction=True)

EVENT = b'{"event": "order.completed", "email": "ada@example.com"}'


def post_event(front: LeanFront, key: str) -> str:
    started: list[str] = []
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/events",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(EVENT),
        "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(EVENT)),
        "HTTP_AUTHORIZATION": f"Bearer {key}",
    }
    b"".join(front(environ, lambda status, headers, exc_info=None: started.append(status)))
    return started[0]


def unreachable(_: Any, __: Any) -> Any:
    raise AssertionError("the lean path passed the request to Django")


def test_a_connection_the_server_dropped_is_replaced_by_the_next_request(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Connections kept between requests, as in production (the test settings close each
    # one at the end of its request, which would hide what is tested here).
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    front = LeanFront(unreachable)
    key = world.keys["project"]
    assert post_event(front, key) == "202 Accepted"
    first = connection.connection
    assert first is not None
    kept = statement_cursor(connections[DEFAULT_DB_ALIAS])
    assert post_event(front, key) == "202 Accepted"
    assert connection.connection is first
    assert statement_cursor(connections[DEFAULT_DB_ALIAS]) is kept

    # The server ends the session (a restart, a failover).
    with psycopg.connect(first.info.dsn, password=first.info.password) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [first.info.backend_pid])

    # The request that meets the dead session fails; the connection is dropped at its end.
    assert post_event(front, key) == "500 Internal Server Error"
    assert connection.connection is None
    # The next one connects again, and its statement runs on the new connection.
    assert post_event(front, key) == "202 Accepted"
    assert connection.connection is not None
    assert connection.connection is not first
    assert statement_cursor(connections[DEFAULT_DB_ALIAS]) is not kept
    assert post_event(front, key) == "202 Accepted"


def test_a_receiver_of_the_request_signals_hears_every_lean_request(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: list[str] = []

    def started(**kwargs: Any) -> None:
        heard.append("started")

    def finished(**kwargs: Any) -> None:
        heard.append("finished")

    front = LeanFront(unreachable)
    key = world.keys["project"]
    assert post_event(front, key) == "202 Accepted"
    request_started.connect(started)
    request_finished.connect(finished)
    try:
        assert post_event(front, key) == "202 Accepted"
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert post_event(front, key) == "202 Accepted"
    assert heard == ["started", "finished"]
