"""The library internals config/libinternals.py reaches into are still where it reaches,
and what it does with them still takes effect: against a loopback HTTP/1.1 server, the
loopback APNs stand-in over HTTP/2 (what goes on the wire), and the database."""

import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import hpack
import httpcore
import httpx
import pytest
from django.core.cache import caches
from django.core.signals import request_finished, request_started
from django.db import connection, connections
from django.dispatch import Signal
from django.urls.resolvers import RoutePattern
from django.utils.translation import gettext_lazy

from bench import keys
from bench.standins import ApnsStandin
from config.api import lean
from config.libinternals import (
    connections_opened,
    h2_encoders,
    httpx_errors,
    instance_blank,
    receiver_keys,
    related_cache,
    route_untranslated,
    transport_over,
)
from config.net.guardedhttp import GuardedClient, _ProviderEncoder
from tenancy.models import Project


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


class RecordingBackend(httpcore.SyncBackend):
    def __init__(self) -> None:
        self.connected: list[tuple[str, int]] = []

    def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        self.connected.append((host, port))
        return super().connect_tcp(host, port, *args, **kwargs)


def test_an_httpx_transport_sends_through_the_pool_it_is_given(server):
    backend = RecordingBackend()
    pool = httpcore.ConnectionPool(network_backend=backend)
    client = httpx.Client(transport=transport_over(pool, trust_env=False), trust_env=False)
    port = server.server_address[1]

    response = client.get(f"http://127.0.0.1:{port}/")

    assert response.status_code == 204
    assert backend.connected == [("127.0.0.1", port)]
    client.close()


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    ],
)
def test_httpcore_s_errors_come_out_as_httpx_s(raised, expected):
    with pytest.raises(expected, match="gone"), httpx_errors():
        raise raised("gone")


def _header_blocks(wire: bytes) -> list[bytes]:
    """The HPACK blocks of the HEADERS frames (with their CONTINUATIONs) a client sent."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    assert wire.startswith(preface)
    at, blocks = len(preface), []
    while at + 9 <= len(wire):
        length = int.from_bytes(wire[at : at + 3], "big")
        kind, flags = wire[at + 3], wire[at + 4]
        payload = wire[at + 9 : at + 9 + length]
        at += 9 + length
        if kind == 0x1:  # HEADERS: padding and priority fields come before the block
            start, end = 0, len(payload)
            if flags & 0x8:
                start, end = 1, len(payload) - payload[0]
            if flags & 0x20:
                start += 5
            blocks.append(payload[start:end])
        elif kind == 0x9:  # CONTINUATION
            blocks[-1] += payload
    return blocks


def test_an_h2_connection_s_encoder_takes_the_provider_policy_from_its_second_request():
    with ApnsStandin(
        private_key_pem=keys.apns_p8(),
        key_id="ABC123DEFG",
        team_id="TEAM123456",
        bundle_id="com.example.shop",
        keep_wire=True,
    ) as standin:
        client = GuardedClient(
            allow_loopback_http=True,
            timeout=5,
            http1=False,
            http2=True,
            unindexed=(b":path", b"apns-id"),
        )
        base = client.checked_url(standin.url)
        sent = []
        for _ in range(3):
            path, apns_id = f"/3/device/{uuid.uuid4().hex * 2}", str(uuid.uuid4())
            sent.append((path.encode(), apns_id.encode()))
            client.post(
                client.at(base, path),
                headers=[(b"apns-id", apns_id.encode()), (b"apns-topic", b"com.example.shop")],
                content=b"{}",
            )

        [encoder] = h2_encoders(client._pool)
        assert type(encoder) is _ProviderEncoder
        assert encoder.unindexed == {b":path", b"apns-id"}
        client.close()
        wire = bytes(standin.wire[1])

    decoder = hpack.Decoder()
    blocks = _header_blocks(wire)
    assert len(blocks) == 3
    decoded = [decoder.decode(block, raw=True) for block in blocks]
    for number, (block, headers, (path, apns_id)) in enumerate(
        zip(blocks, decoded, sent, strict=True)
    ):
        fields = {name: header for header in headers for name in [header[0]]}
        assert fields[b":path"][1] == path
        assert fields[b"apns-id"][1] == apns_id
        assert fields[b"apns-topic"][1] == b"com.example.shop"
        never_indexed = {
            name
            for name, header in fields.items()
            if isinstance(header, hpack.NeverIndexedHeaderTuple)
        }
        if number == 0:
            # Made inside the first request, the connection's encoder was hpack's own:
            # Huffman-coded literals, the path and id added to the table.
            assert never_indexed == set()
            assert path not in block
        else:
            # Then the provider policy: the path and id as never-indexed literals, sent
            # as they are (no Huffman), and the topic a one-byte reference to the table.
            assert never_indexed == {b":path", b"apns-id"}
            assert path in block
            assert apns_id in block
            assert b"com.example.shop" not in block
    assert [value for name, value in encoder.header_table.dynamic_entries if name == b":path"] == [
        sent[0][0]
    ]


def test_a_blank_instance_is_new_or_read_as_django_leaves_one():
    new = instance_blank(Project)
    read = instance_blank(Project, db="default")
    made = Project()
    loaded = Project.from_db(
        "default",
        [field.attname for field in Project._meta.concrete_fields],
        [None] * len(Project._meta.concrete_fields),
    )

    assert (new._state.adding, new._state.db) == (made._state.adding, made._state.db)
    assert (read._state.adding, read._state.db) == (loaded._state.adding, loaded._state.db)
    assert type(new._state) is type(made._state)
    assert related_cache(new) == {} == made._state.fields_cache
    assert new.__dict__ == {"_state": new._state}


@pytest.mark.django_db
def test_a_related_instance_put_in_the_cache_is_what_its_foreign_key_reads(
    world, django_assert_num_queries
):
    project = Project.objects.get(pk=world.project.pk)

    related_cache(project)["team"] = world.team

    with django_assert_num_queries(0):
        assert project.team is world.team
    assert connection.alias == project._state.db


def test_a_signal_s_receivers_are_read_by_their_lookup_keys_in_calling_order():
    signal = Signal()

    def first(**kwargs: Any) -> None: ...

    def second(**kwargs: Any) -> None: ...

    sender = object()
    signal.connect(first)
    signal.connect(second, sender=sender)
    assert receiver_keys(signal) == ((id(first), id(None)), (id(second), id(sender)))
    signal.disconnect(first)
    assert receiver_keys(signal) == ((id(second), id(sender)),)


def test_the_lean_path_knows_django_s_own_request_signal_receivers():
    """The lean path calls the request signals' receivers directly only while they are
    exactly Django's own (config/api/lean.py): when Django changes them, this fails
    rather than the lean path quietly falling back to sending the signals."""
    assert receiver_keys(request_started) == lean._STARTED
    assert receiver_keys(request_finished) == lean._FINISHED


def test_a_route_reads_as_untranslated_only_when_given_as_a_string() -> None:
    assert route_untranslated(RoutePattern("contacts/<uuid:contact_id>"))
    assert not route_untranslated(RoutePattern(gettext_lazy("contacts/<uuid:contact_id>")))


@pytest.mark.django_db
def test_the_opened_connections_are_those_django_lists_as_made() -> None:
    """`connections_opened` stands in for `all(initialized_only=True)` on the lean path's
    hot path: the same connections, in the same order, for the database and the caches,
    in a thread that made none and in one that made them."""
    seen: dict[str, Any] = {}

    def fresh_thread() -> None:
        seen["before"] = (connections_opened(connections), connections_opened(caches))
        seen["django before"] = (
            connections.all(initialized_only=True),
            caches.all(initialized_only=True),
        )
        connection.ensure_connection()
        caches["default"].get("nothing")
        seen["after"] = (connections_opened(connections), connections_opened(caches))
        seen["django after"] = (
            connections.all(initialized_only=True),
            caches.all(initialized_only=True),
        )
        connection.close()

    thread = Thread(target=fresh_thread)
    thread.start()
    thread.join()
    assert seen["before"] == seen["django before"] == ([], [])
    assert seen["after"] == seen["django after"]
    assert [made.alias for made in seen["after"][0]] == ["default"]
    assert len(seen["after"][1]) == 1


def test_the_lean_path_skips_closing_caches_only_when_closing_them_does_nothing(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Django's Redis cache and every backend that keeps the base class's `close` close
    nothing; a backend with its own `close` is closed at the end of each request."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache"},
        "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    assert lean._caches_close_nothing()
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache"},
        "memcached": {"BACKEND": "django.core.cache.backends.memcached.PyMemcacheCache"},
    }
    assert not lean._caches_close_nothing()
    closed: list[bool] = []
    monkeypatch.setattr(lean, "close_caches", lambda: closed.append(True))
    lean.request_finished()
    assert closed == [True]
