"""The guarded client connects only to addresses the URL guard approved."""

import gzip
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import hpack
import httpx
import pytest

from config.net import netguard
from config.net.guardedhttp import GuardedClient, _ProviderEncoder

# Names only this test's resolver knows: the system's cannot give them an address.
NAMES = {"stand-in.example.net": ["127.0.0.1"], "inside.example.net": ["10.20.30.40"]}


def resolve(host: str, port: int) -> list[str]:
    if host in NAMES:
        return NAMES[host]
    return netguard.system_resolve(host, port)


@pytest.fixture(autouse=True)
def _names() -> Iterator[None]:
    netguard.set_resolver(resolve)
    yield
    netguard.set_resolver(None)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(204)
            self.end_headers()

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            answer = self.path.encode() + body
            self.send_response(200)
            self.send_header("x-host", self.headers["host"])
            if self.path == "/gzip":
                answer = gzip.compress(answer)
                self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_checked_name_is_reached_at_the_address_the_guard_approved(server):
    client = GuardedClient(allow_loopback_http=True, timeout=5)
    url = client.checked(f"http://stand-in.example.net:{server.server_address[1]}/")

    assert client.http.get(url).status_code == 204
    client.close()


def test_a_request_that_skipped_the_check_cannot_connect(server):
    client = GuardedClient(allow_loopback_http=True, timeout=5)

    with pytest.raises(httpx.ConnectError):
        client.http.get(f"http://127.0.0.1:{server.server_address[1]}/")
    client.close()


def test_the_check_refuses_what_the_guard_refuses():
    client = GuardedClient(allow_loopback_http=False, timeout=5)

    with pytest.raises(netguard.UrlRefused):
        client.checked("http://stand-in.example.net/")
    with pytest.raises(netguard.UrlRefused):
        client.checked("https://stand-in.example.net/")
    with pytest.raises(netguard.UrlRefused):
        client.checked("https://inside.example.net/")
    with pytest.raises(netguard.UrlUnresolved):
        client.checked("https://nowhere.invalid/")
    client.close()


def test_a_checked_https_host_is_not_reused_for_plain_http():
    client = GuardedClient(allow_loopback_http=False, timeout=5)
    client._backend.pin("stand-in.example.net", 443, ("127.0.0.1",))

    with pytest.raises(netguard.UrlRefused):
        client.checked("http://stand-in.example.net:443/")
    client.close()


def test_a_post_goes_to_the_checked_host_at_the_path_given(server):
    client = GuardedClient(allow_loopback_http=True, timeout=5)
    base = client.checked_url(f"http://stand-in.example.net:{server.server_address[1]}")

    response = client.post(
        client.at(base, "/3/device/ab01"), headers=[(b"x-kind", b"test")], content=b"{}"
    )

    assert response.status_code == 200
    assert response.content == b"/3/device/ab01{}"
    assert response.header("x-host") == f"stand-in.example.net:{server.server_address[1]}"
    assert response.header("x-absent") is None
    client.close()


def test_a_post_s_answer_is_decoded_as_httpx_would(server):
    client = GuardedClient(allow_loopback_http=True, timeout=5)
    base = client.checked_url(f"http://stand-in.example.net:{server.server_address[1]}")

    response = client.post(client.at(base, "/gzip"), headers=[], content=b'{"a": 1}')

    assert response.content == b'/gzip{"a": 1}'
    client.close()


def test_a_post_that_cannot_connect_raises_httpx_s_error():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    client = GuardedClient(allow_loopback_http=True, timeout=5)
    url = client.checked_url(f"http://stand-in.example.net:{port}/x")

    with pytest.raises(httpx.ConnectError):
        client.post(url, headers=[], content=b"")
    client.close()


@pytest.mark.parametrize("path", ["@inside.example.net/", "a", "/a?b", "/a#b", "/a b", "//x/%2e"])
def test_only_a_plain_path_is_set_on_a_checked_url(path):
    client = GuardedClient(allow_loopback_http=True, timeout=5)
    base = client.checked_url("http://stand-in.example.net:8080")

    with pytest.raises(ValueError, match="must be plain"):
        client.at(base, path)
    client.close()


def test_the_provider_encoder_keeps_values_that_never_repeat_out_of_its_table():
    encoder, decoder = _ProviderEncoder(), hpack.Decoder()
    encoder.unindexed = frozenset({b":path"})
    sent = [
        [
            hpack.HeaderTuple(b":path", f"/3/device/{n:064x}".encode()),
            hpack.HeaderTuple(b"apns-topic", b"com.example.app"),
            hpack.NeverIndexedHeaderTuple(b"authorization", b"bearer secret"),
        ]
        for n in range(3)
    ]

    received = [decoder.decode(encoder.encode(headers), raw=True) for headers in sent]

    assert received == sent
    assert [[header.indexable for header in headers] for headers in received] == [
        [False, True, False]
    ] * 3
    assert [name for name, _ in encoder.header_table.dynamic_entries] == [b"apns-topic"]
