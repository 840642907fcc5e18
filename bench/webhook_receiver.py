"""A loopback webhook receiver: a threaded HTTP/1.1 server (keep-alive) on 127.0.0.1 that
records every POST and answers what a test scripted for its path: statuses in turn (then
200), or nothing until released (a receiver that keeps the sender mid-request). Used by
the end-to-end test of webhooks and by the delivery benchmark (`record=False`: it counts)."""

import contextlib
import json
import sys
import threading
from collections import defaultdict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # A listen backlog of 5 (socketserver's) drops the SYNs of a burst of new connections,
    # which then wait a second to retry; a real server's backlog is far longer.
    request_queue_size = 128


class WebhookReceiver:
    def __init__(self, *, record: bool = True) -> None:
        self.lock = threading.Lock()
        self.record = record
        self.received: list[Received] = []
        self.requests = 0
        self.connections = 0
        self._statuses: dict[str, deque[int]] = defaultdict(deque)
        self._held: dict[str, threading.Event] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with receiver.lock:
                    receiver.connections += 1

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status = receiver._arrived(self.path, self.headers, body)
                # The sender may be gone by now (killed while held): nothing to answer.
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("content-length", "0")
                    self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _arrived(self, path: str, headers: Any, body: bytes) -> int:
        """Records the request; the status to answer, once any hold on its path is over."""
        with self.lock:
            self.requests += 1
            if self.record:
                named = {name.lower(): value for name, value in headers.items()}
                self.received.append(Received(path, named, body))
            statuses = self._statuses.get(path)
            status = statuses.popleft() if statuses else 200
            held = self._held.get(path)
        if held is not None:
            held.wait(timeout=120)
        return status

    def url(self, path: str) -> str:
        """The URL of `path` (e.g. "/hooks/a") on this receiver."""
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, path: str, *statuses: int) -> None:
        """The next requests to `path` get `statuses` in turn, then 200."""
        with self.lock:
            self._statuses[path].extend(statuses)

    def hold(self, path: str) -> None:
        """Requests to `path` get no answer until `release(path)`."""
        with self.lock:
            self._held[path] = threading.Event()

    def release(self, path: str) -> None:
        with self.lock:
            held = self._held.pop(path, None)
        if held is not None:
            held.set()

    def to(self, path: str) -> list[Received]:
        """The requests `path` received, in order."""
        with self.lock:
            return [request for request in self.received if request.path == path]

    def start(self) -> "WebhookReceiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.lock:
            held = list(self._held.values())
        for event in held:
            event.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "WebhookReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """`python -m bench.webhook_receiver`: a counting receiver in a process of its own; prints
    its URL, then answers each line on standard input with the requests received so far,
    until standard input closes."""
    with WebhookReceiver(record=False) as receiver:
        print(receiver.url(""), flush=True)
        for _ in sys.stdin:
            with receiver.lock:
                print(json.dumps({"requests": receiver.requests}), flush=True)


if __name__ == "__main__":
    main()
