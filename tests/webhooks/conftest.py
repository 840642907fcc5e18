"""A real loopback HTTP receiver, a service clock that starts at the real time (the
Standard Webhooks verifier compares `webhook-timestamp` with the wall clock), and the
workers' loop run in-process."""

import datetime as dt
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from config.net import netguard
from config.runtime import clock as service_clock
from events.services.processing import events_process_batch
from events.wake import events_wake_rearm
from tests.conftest import Clock
from webhooks.services.delivery import webhook_deliver_batch


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Reply:
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class Receiver:
    """A threaded HTTP server on 127.0.0.1 that records every request and answers with the
    reply routed to its path (`route`), else the queued replies in order (200 once they
    run out)."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.replies: list[Reply] = []
        self.routes: dict[str, Reply] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = receiver.routes.get(self.path) or (
                        receiver.replies.pop(0) if receiver.replies else Reply()
                    )
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def reply(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def route(self, path: str, reply: Reply) -> None:
        """Answers every request to `path` with `reply`."""
        with self.lock:
            self.routes[path] = reply

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def wall_clock() -> Iterator[Clock]:
    """The service clock, frozen at the real time when the test starts, moved by the test."""
    fake = Clock(dt.datetime.now(dt.UTC))
    service_clock.set_source(fake)
    yield fake
    service_clock.set_source(None)


@pytest.fixture(autouse=True)
def _loopback_allowed(settings: Any) -> None:
    """Local receivers are http on loopback (WEBHOOKS_ALLOW_HTTP, for tests only); a test
    of the guard turns it off."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    events_wake_rearm()


# Names the tests resolve without a DNS server.
NAMES = {
    "hooks.example.com": ["93.184.216.34"],
    "intranet.example.com": ["10.0.0.7"],
    "loopback.example.com": ["127.0.0.1"],
    "metadata.example.com": ["169.254.169.254"],
    "mapped.example.com": ["::ffff:127.0.0.1"],
    "sneaky.example.com": ["93.184.216.34", "192.168.1.10"],
}


def fake_resolve(host: str, port: int) -> list[str]:
    if host in NAMES:
        return NAMES[host]
    return netguard.system_resolve(host, port)


@pytest.fixture
def names() -> Iterator[dict[str, list[str]]]:
    netguard.set_resolver(fake_resolve)
    yield NAMES
    netguard.set_resolver(None)


def drain() -> dict[str, int]:
    """What the workers do, in-process, until nothing is due: process events (which makes
    the deliveries), then deliver them. Counts what each claimed."""
    counts = {"events": 0, "deliveries": 0}
    while True:
        events = events_process_batch().claimed
        deliveries = webhook_deliver_batch()
        counts["events"] += events
        counts["deliveries"] += deliveries
        if not (events or deliveries):
            return counts


def verified(secret: str, request: Received) -> Any:
    """The body as the Standard Webhooks reference library verifies it (raises otherwise)."""
    return Webhook(secret).verify(request.body, request.headers)
