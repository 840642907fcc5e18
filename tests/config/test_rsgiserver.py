"""The WSGI environ config/net/rsgiserver.py builds from granian's RSGI request scope (PEP
3333), which requests it reads a body for, how it reads one, and the threads that run
requests. The server itself is driven over sockets in tests/test_server_slow_bodies.py."""

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from config.net.rsgiserver import (
    BodyIncomplete,
    BodyTimeout,
    BodyTooLarge,
    _has_body,
    read_body,
    wsgi_environ,
)


@dataclass
class Headers:
    pairs: list[tuple[str, str]]

    def items(self) -> list[tuple[str, str]]:
        return self.pairs


@dataclass
class Scope:
    """The members of granian's RSGI scope the front reads."""

    method: str = "GET"
    path: str = "/contacts"
    query_string: str = ""
    headers: Headers = field(default_factory=lambda: Headers([]))
    server: str = "127.0.0.1:8000"
    client: str = "127.0.0.1:51234"
    scheme: str = "http"
    http_version: str = "1.1"
    proto: str = "http"


def test_the_environ_holds_the_request_line_and_the_addresses():
    environ = wsgi_environ(Scope(method="POST", path="/events/batch", query_string="a=%20b"))

    assert {key: environ[key] for key in environ if not key.startswith("wsgi.")} == {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": "/events/batch",
        "QUERY_STRING": "a=%20b",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }
    assert environ["wsgi.url_scheme"] == "http"
    assert environ["wsgi.input_terminated"] is True


def test_a_path_is_given_as_its_utf8_bytes_one_character_each():
    environ = wsgi_environ(Scope(path="/café"))

    assert environ["PATH_INFO"] == "/caf\xc3\xa9"
    assert environ["PATH_INFO"].encode("latin-1").decode("utf-8") == "/café"


def test_headers_are_prefixed_and_repeated_ones_joined():
    headers = Headers(
        [
            ("content-type", "application/json"),
            ("content-length", "12"),
            ("authorization", "Bearer sr_x"),
            ("x-forwarded-for", "10.0.0.1"),
            ("x-forwarded-for", "10.0.0.2"),
            ("cookie", "a=1"),
            ("cookie", "b=2"),
        ]
    )

    environ = wsgi_environ(Scope(headers=headers))

    assert environ["CONTENT_TYPE"] == "application/json"
    assert environ["CONTENT_LENGTH"] == "12"
    assert environ["HTTP_AUTHORIZATION"] == "Bearer sr_x"
    assert environ["HTTP_X_FORWARDED_FOR"] == "10.0.0.1,10.0.0.2"
    assert environ["HTTP_COOKIE"] == "a=1; b=2"
    assert "HTTP_CONTENT_TYPE" not in environ


def test_an_ipv6_client_is_its_address_alone():
    environ = wsgi_environ(Scope(server="[::1]:8000", client="[::1]:40000"))

    assert environ["REMOTE_ADDR"] == "::1"
    assert environ["SERVER_NAME"] == "::1"


def test_a_body_is_read_when_one_is_declared_or_chunked():
    def has_body(*pairs: tuple[str, str], version: str = "1.1") -> bool:
        return _has_body(wsgi_environ(Scope(headers=Headers(list(pairs)), http_version=version)))

    assert has_body(("content-length", "3"))
    assert has_body(("transfer-encoding", "chunked"))
    assert has_body(version="2")
    assert not has_body(("content-length", "0"))
    assert not has_body()


def test_request_threads_answer_each_request_and_survive_a_failure_and_a_cancel():
    import asyncio
    import threading

    from config.net.rsgiserver import RequestThreads

    release = threading.Event()

    def respond(environ):
        if environ.get("fail"):
            raise RuntimeError("the application failed")
        if environ.get("wait"):
            release.wait(5)
        return 200, [("X-Thread", threading.current_thread().name)], environ["body"]

    threads = RequestThreads(2, respond)

    async def scenario():
        answers = await asyncio.gather(*(threads.run({"body": bytes([n])}) for n in range(20)))
        assert [answer[2] for answer in answers] == [bytes([n]) for n in range(20)]
        assert {answer[1][0][1] for answer in answers} <= {"request-0", "request-1"}
        with pytest.raises(RuntimeError, match="the application failed"):
            await threads.run({"fail": True})
        # A request whose client went away while it ran: its answer is dropped quietly.
        waiting = asyncio.ensure_future(threads.run({"wait": True, "body": b"late"}))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        return await threads.run({"body": b"after"})

    assert asyncio.run(scenario())[2] == b"after"
    threads.shutdown()
    assert not any(thread.is_alive() for thread in threads.threads)


@dataclass
class Proto:
    """A request body as granian's RSGI protocol gives it: chunks, each after a delay; a
    delay of None never ends (a client that stalls)."""

    chunks: list[tuple[float | None, bytes]]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for delay, chunk in self.chunks:
            await asyncio.sleep(3600 if delay is None else delay)
            yield chunk


def read(proto: Proto, *, declared: int | None, limit: int = 10_000, pause: float = 0.2) -> bytes:
    async def reading() -> bytes:
        with await read_body(proto, declared=declared, limit=limit, pause=pause) as body:
            return body.read()

    return asyncio.run(reading())


@pytest.mark.parametrize("declared", [12, None])
def test_a_body_sent_in_steady_chunks_is_read_whatever_it_takes_in_all(declared):
    # Each chunk within the pause, the whole well over it.
    started = time.monotonic()
    assert read(Proto([(0.08, b"ab")] * 6), declared=declared) == b"ab" * 6
    assert time.monotonic() - started > 0.4


@pytest.mark.parametrize("size", [12, 3_000_000])
def test_a_body_of_its_declared_length_is_whole_without_the_end_of_the_stream(size):
    # The stream's end never comes: the read ends with the declared length, in memory and
    # on disk alike.
    half = size // 2
    body = b"a" * half + b"b" * (size - half)
    proto = Proto([(0, body[:half]), (0.01, body[half:]), (None, b"")])
    started = time.monotonic()
    assert read(proto, declared=size, limit=5_000_000, pause=5) == body
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("declared", [6, None])
def test_a_client_that_stops_sending_is_timed_out_after_the_pause(declared):
    started = time.monotonic()
    with pytest.raises(BodyTimeout):
        read(Proto([(0, b"abc"), (None, b"def")]), declared=declared, pause=0.2)
    assert 0.2 <= time.monotonic() - started < 2


def test_a_read_cancelled_from_outside_is_cancelled_not_timed_out():
    async def scenario() -> None:
        reading = asyncio.ensure_future(
            read_body(Proto([(None, b"abc")]), declared=3, limit=100, pause=0.1)
        )
        await asyncio.sleep(0.02)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        # The read's own timer is gone with it.
        await asyncio.sleep(0.15)

    asyncio.run(scenario())


def test_a_body_too_large_or_ended_early_is_refused():
    with pytest.raises(BodyTooLarge):
        read(Proto([(0, b"x" * 60)] * 2), declared=None, limit=100)
    with pytest.raises(BodyTooLarge):
        read(Proto([]), declared=101, limit=100)
    with pytest.raises(BodyIncomplete):
        read(Proto([(0, b"abc")]), declared=5)
    with pytest.raises(BodyIncomplete):
        read(Proto([(0, b"abc")]), declared=3_000_000, limit=5_000_000)
