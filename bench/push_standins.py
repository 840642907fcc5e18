"""The loopback FCM and APNs stand-ins of the push benchmark, each in a process of its own
(as the real providers are elsewhere): the stand-ins of the test suite, which check what
the providers check (the OAuth assertion and access token, the path and JSON; the ES256
provider token, topic and payload of every APNs request over HTTP/2), counting when each
notification was accepted.

`python -m bench.push_standins` reads one JSON line on standard input, the stand-in to
run (`{"kind": "fcm", "account": ...}` or `{"kind": "apns", ...}`), answers with one line
`{"url": ...}`, then answers each `take` line with the arrival times (`time.monotonic()`,
one clock for every process) since the last take, the problems seen and the connection
count. It stops when standard input closes."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

from bench.harness import StdioProcess
from bench.standins import ApnsStandin, FcmStandin


class Arrivals:
    """When each notification was accepted."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.lock = threading.Lock()

    def note(self) -> None:
        with self.lock:
            self.times.append(time.monotonic())

    def take(self) -> list[float]:
        with self.lock:
            taken, self.times = sorted(self.times), []
        return taken


class CountingFcm(FcmStandin):
    def __init__(self, arrivals: Arrivals, **kw: Any) -> None:
        super().__init__(**kw)
        self.arrivals = arrivals
        # The handler writes the head and the body apart: with Nagle's algorithm the body
        # waits for the client's delayed ACK (40 ms), which would be all the bench measured.
        # The stub types RequestHandlerClass as a callable, not the StreamRequestHandler
        # class whose flag this sets.
        self.server.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]

    def handle(self, path: str, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        answer = super().handle(path, headers, body)
        if answer[0] == 200 and path != "/token":
            self.arrivals.note()
        return answer


class CountingApns(ApnsStandin):
    def __init__(self, arrivals: Arrivals, **kw: Any) -> None:
        super().__init__(**kw)
        self.arrivals = arrivals

    def _serve(self, sock: socket.socket, number: int) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super()._serve(sock, number)

    def _answer(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        answer = super()._answer(request)
        if answer[0] == 200:
            self.arrivals.note()
        return answer


def serve() -> None:
    spec = json.loads(sys.stdin.readline())
    arrivals = Arrivals()
    kind = spec.pop("kind")
    standin: CountingFcm | CountingApns = (
        CountingFcm(arrivals, **spec) if kind == "fcm" else CountingApns(arrivals, **spec)
    )
    standin.__enter__()
    try:
        print(json.dumps({"url": standin.url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "take":
                report = {
                    "arrivals": arrivals.take(),
                    "problems": list(standin.problems),
                    "connections": standin.connections,
                }
                print(json.dumps(report), flush=True)
    finally:
        standin.__exit__(None, None, None)


class StandinProcess(StdioProcess):
    """One stand-in's process, seen from the benchmark."""

    def __init__(self, kind: str, **spec: Any) -> None:
        super().__init__("bench.push_standins")
        self.spec = spec
        self.problems: list[str] = []
        self.connections = 0
        self._write(json.dumps({"kind": kind, **spec}))
        self.url: str = self._read()["url"]

    @property
    def account(self) -> dict[str, Any]:
        account: dict[str, Any] = self.spec["account"]
        return account

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def _write(self, line: str) -> None:
        self.write_line(line)

    def _read(self) -> dict[str, Any]:
        line = self.read_line()
        if not line:
            raise RuntimeError("a push stand-in stopped")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def take(self) -> list[float]:
        """The arrival times since the last take; refreshes `problems` and `connections`."""
        self._write("take")
        report = self._read()
        self.problems, self.connections = report["problems"], report["connections"]
        return list(report["arrivals"])


if __name__ == "__main__":
    serve()
