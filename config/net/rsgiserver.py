"""The production server: granian's RSGI interface in front of the Django WSGI application
(`granian --interface rsgi config.rsgi:application`).

granian's WSGI interface hands a request to a Python thread as soon as its headers have
arrived, and the thread then blocks reading the body for as long as the client takes. A
few clients that send part of a body and stall held every thread (no other request was
answered), and their connections stayed open for good: granian has no body timeout, and a
blocked read cannot be interrupted from Python. Here each body is read first, on the
worker's event loop, which waits on any number of clients at no thread's cost: a client
that pauses longer than REQUEST_BODY_TIMEOUT_SECONDS while sending it is answered 408 and
its connection closed, and a body larger than any endpoint takes is 413 before it is read.
Only a request whose body has arrived whole takes one of the SERVER_THREADS threads that
run Django, exactly as the WSGI server ran it (one thread per request, its database
connection kept between requests). Bodies that fit in memory are read as a list of chunks
(most arrive in one) rather than into a spooled file; the workers run on uvloop.

Answers are sent whole: the API streams none.
"""

import asyncio
import io
import json
import logging
import queue
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

from django.conf import settings

from config.api.envelope import error_body

logger = logging.getLogger(__name__)

# The largest body any endpoint takes: a CSV import (IMPORT_MAX_FILE_BYTES) in its
# multipart form, or an event batch (36 MiB). Each endpoint applies its own, smaller,
# limit after authentication; this one only stops a body no endpoint would read.
MULTIPART_ALLOWANCE = 1024 * 1024
EVENT_BATCH_BYTES = 36 * 1024 * 1024

# Headers that are not `HTTP_`-prefixed in a WSGI environ.
_UNPREFIXED = {"CONTENT_TYPE", "CONTENT_LENGTH"}
_CLOSE = [("content-type", "application/json"), ("connection", "close")]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class BodyTimeout(Exception):
    """The client paused longer than the body timeout."""


class BodyTooLarge(Exception):
    """The body is (or declares itself) larger than any endpoint takes."""


class BodyIncomplete(Exception):
    """The client closed the connection before sending the body it declared."""


def body_limit() -> int:
    return max(int(settings.IMPORT_MAX_FILE_BYTES) + MULTIPART_ALLOWANCE, EVENT_BATCH_BYTES)


def _latin1(text: str) -> str:
    """A str of UTF-8 bytes, one character a byte, as PEP 3333 has paths and headers."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


# Header name -> environ key, for the names seen so far (a client cannot grow it past
# _KEYS_MAX: names past it are translated each time).
_KEYS: dict[str, str] = {}
_KEYS_MAX = 512


def _environ_key(name: str) -> str:
    key = _KEYS.get(name)
    if key is None:
        key = name.upper().replace("-", "_")
        if key not in _UNPREFIXED:
            key = f"HTTP_{key}"
        if len(_KEYS) < _KEYS_MAX:
            _KEYS[name] = key
    return key


def wsgi_environ(scope: Any) -> dict[str, Any]:
    """The WSGI environ of an RSGI request scope (PEP 3333), without `wsgi.input`."""
    server_host, _, server_port = scope.server.rpartition(":")
    client = scope.client.rpartition(":")[0] if ":" in scope.client else scope.client
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _latin1(scope.path),
        "QUERY_STRING": scope.query_string,
        "SERVER_NAME": server_host.strip("[]"),
        "SERVER_PORT": server_port,
        "SERVER_PROTOCOL": f"HTTP/{scope.http_version}",
        "REMOTE_ADDR": client.strip("[]"),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.scheme,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,
    }
    for name, value in scope.headers.items():
        key = _environ_key(name)
        value = _latin1(value)
        if key in environ:
            value = f"{environ[key]}{'; ' if key == 'HTTP_COOKIE' else ','}{value}"
        environ[key] = value
    return environ


def _declared_length(environ: dict[str, Any]) -> int | None:
    """The body's declared length; None when it is chunked (or, over HTTP/2, unsaid)."""
    text = environ.get("CONTENT_LENGTH", "")
    return int(text) if text.isdigit() else None


def _has_body(environ: dict[str, Any]) -> bool:
    declared = _declared_length(environ)
    if declared is not None:
        return declared > 0
    return "HTTP_TRANSFER_ENCODING" in environ or environ["SERVER_PROTOCOL"] == "HTTP/2"


async def read_body(proto: Any, *, declared: int | None, limit: int, pause: float) -> IO[bytes]:
    """The whole body, in memory up to Django's upload size and on disk past it. Raises
    BodyTimeout when the client sends nothing for `pause` seconds, BodyTooLarge past
    `limit` bytes, BodyIncomplete when it closes before its declared length."""
    if declared is not None and declared > limit:
        raise BodyTooLarge
    if declared is not None and declared <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        # Most bodies arrive in one chunk, kept as it is.
        chunks: list[bytes] = []
        size = await _read(proto, pause, chunks.append, until=declared)
        if size < declared:
            raise BodyIncomplete
        return io.BytesIO(chunks[0] if len(chunks) == 1 else b"".join(chunks))
    # The caller closes it once the request is answered.
    # SIM115: the caller closes it, so no with block.
    body = tempfile.SpooledTemporaryFile(max_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE)  # noqa: SIM115
    written = 0

    def write(chunk: bytes) -> None:
        nonlocal written
        written += len(chunk)
        if written > limit:
            raise BodyTooLarge
        body.write(chunk)

    try:
        size = await _read(proto, pause, write, until=declared)
        if declared is not None and size < declared:
            raise BodyIncomplete
    except BaseException:
        body.close()
        raise
    body.seek(0)
    return body


class _Pause:
    """Ends a body read once the client has sent nothing for `pause` seconds: one timer
    for the read, moved on only when it comes due before a pause that long has passed
    since the last chunk. (`asyncio.timeout` around each chunk's wait set and cancelled a
    timer per chunk and cost more than the rest of the read.)"""

    __slots__ = ("cancelling", "expired", "handle", "last", "loop", "pause", "task")

    def __init__(self, pause: float) -> None:
        self.loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("A body is read in a task.")
        self.task = task
        # Cancellations asked for before this read: not this read's to take back.
        self.cancelling = task.cancelling()
        self.pause = pause
        self.last = self.loop.time()
        self.expired = False
        self.handle = self.loop.call_at(self.last + pause, self._due)

    def _due(self) -> None:
        due = self.last + self.pause
        if self.loop.time() < due:
            self.handle = self.loop.call_at(due, self._due)
            return
        self.expired = True
        self.task.cancel()

    def timed_out(self) -> bool:
        """Whether the cancellation being raised is this read's own, taken back if so."""
        return self.expired and self.task.uncancel() <= self.cancelling


async def _read(
    proto: Any, pause: float, take: Callable[[bytes], None], until: int | None = None
) -> int:
    """Hands each chunk of the body to `take` as it arrives; its size in all. BodyTimeout
    when the client sends nothing for `pause` seconds.

    A body whose length was declared (`until`) is whole once that many bytes have come:
    the read ends there instead of asking for the stream's end. Each step of granian's
    body stream is a future settled from its own threads, which wakes the event loop; for
    the usual body of one chunk, that second step cost a POST about 25 µs of CPU across
    the worker's threads."""
    watch = _Pause(pause)
    size = 0
    try:
        async for chunk in proto:
            watch.last = watch.loop.time()
            size += len(chunk)
            take(chunk)
            if until is not None and size >= until:
                break
    except asyncio.CancelledError:
        if watch.timed_out():
            raise BodyTimeout from None
        raise
    finally:
        watch.handle.cancel()
    return size


def _error(status: int, code: str, message: str, details: str = "") -> bytes:
    envelope = error_body(status=status, code=code, message=message, details=details)
    return json.dumps(envelope).encode()


Answer = tuple[int, list[tuple[str, str]], bytes]


class RequestThreads:
    """The threads that run requests, fed by a queue: each request is one queue item and
    one future of the event loop, settled from the thread. The same hand-over as
    `loop.run_in_executor` without its second (concurrent) future and the callbacks that
    chain the two, which cost about as much as the rest of the front."""

    def __init__(self, count: int, respond: Callable[[dict[str, Any]], Answer]) -> None:
        self.respond = respond
        self.queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self.threads = [
            threading.Thread(target=self._serve, name=f"request-{n}", daemon=True)
            for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def run(self, environ: dict[str, Any]) -> "asyncio.Future[Answer]":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Answer] = loop.create_future()
        self.queue.put((environ, future, loop))
        return future

    def _serve(self) -> None:
        while (item := self.queue.get()) is not None:
            environ, future, loop = item
            try:
                answer = self.respond(environ)
            except BaseException as error:  # handed to the request's coroutine
                loop.call_soon_threadsafe(_settle, future, None, error)
            else:
                loop.call_soon_threadsafe(_settle, future, answer, None)

    def shutdown(self) -> None:
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()


def _settle(
    future: "asyncio.Future[Answer]", answer: Answer | None, error: BaseException | None
) -> None:
    if future.cancelled():
        return  # the client went away while its request ran
    if error is not None:
        future.set_exception(error)
    elif answer is not None:
        future.set_result(answer)


class Server:
    """An RSGI application that serves `wsgi` from a pool of threads once each request's
    body has arrived."""

    def __init__(self, wsgi: WsgiApp) -> None:
        self.wsgi = wsgi
        self.threads = RequestThreads(max(int(settings.SERVER_THREADS), 1), self.respond)

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.threads.shutdown()

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        if scope.proto != "http":
            return  # websockets are not served (granian runs with --no-ws)
        environ = wsgi_environ(scope)
        body: IO[bytes] = io.BytesIO()
        if _has_body(environ):
            try:
                body = await read_body(
                    proto,
                    declared=_declared_length(environ),
                    limit=body_limit(),
                    pause=float(settings.REQUEST_BODY_TIMEOUT_SECONDS),
                )
            except BodyTimeout:
                timeout = settings.REQUEST_BODY_TIMEOUT_SECONDS
                proto.response_bytes(
                    408,
                    _CLOSE,
                    _error(
                        408,
                        "request_timeout",
                        "The request body did not arrive in time.",
                        f"The client sent nothing for {timeout:g} seconds.",
                    ),
                )
                return
            except BodyTooLarge:
                limit = body_limit()
                proto.response_bytes(
                    413,
                    _CLOSE,
                    _error(
                        413,
                        "request_too_large",
                        "The request body is too large.",
                        f"No endpoint accepts bodies over {limit} bytes.",
                    ),
                )
                return
            except BodyIncomplete:
                # The client is gone; answered all the same, so the access log says 400.
                proto.response_bytes(
                    400, _CLOSE, _error(400, "bad_request", "The request body ended early.")
                )
                return
            environ["CONTENT_LENGTH"] = str(body.seek(0, io.SEEK_END))
            body.seek(0)
        environ["wsgi.input"] = body
        try:
            status, headers, content = await self.threads.run(environ)
        except Exception:
            logger.exception("The application failed to answer")
            status, headers = 500, _CLOSE
            content = _error(500, "internal_error", "Something went wrong on our side.")
        finally:
            body.close()
        proto.response_bytes(status, headers, content)

    def respond(self, environ: dict[str, Any]) -> Answer:
        """Runs the WSGI application on a pool thread: its status, headers and body."""
        started: list[Any] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> None:
            started[:] = [int(status.split(" ", 1)[0]), headers]

        result = self.wsgi(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished: database connections are tidied here
        return started[0], started[1], content
