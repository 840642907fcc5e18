"""Closed-loop load: N clients, each a thread with its own connection, spread over processes.

Each client repeats one operation (an HTTP request on a keep-alive socket, or a SQL
statement on its own psycopg connection) back to back and records each latency. The HTTP
client is a few lines over a raw socket rather than http.client: parsing responses with
the email package would cost more CPU than the server under test on a two-core machine.
"""

from __future__ import annotations

import math
import multiprocessing
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Clients warm up (connect, first requests) until every process is ready.
START_LEAD_SECONDS = 1.5


@dataclass(frozen=True)
class HttpSpec:
    """One HTTP/1.1 request, sent as is on a keep-alive connection to host:port."""

    host: str
    port: int
    request: bytes

    @classmethod
    def build(
        cls,
        base_url: str,
        path: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> HttpSpec:
        host, _, port = base_url.removeprefix("http://").rstrip("/").partition(":")
        lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: keep-alive"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        if body or method not in ("GET", "HEAD", "DELETE"):
            lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        return cls(host=host, port=int(port or 80), request=request)

    def open(self) -> Callable[[], bool]:
        return _HttpClient(self)

    def describe(self) -> str:
        return self.request.split(b" HTTP/1.1", 1)[0].decode()


class _HttpClient:
    def __init__(self, spec: HttpSpec) -> None:
        self.spec = spec
        self.sock: socket.socket | None = None
        self.buffer = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.spec.host, self.spec.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        return sock

    def _recv(self, sock: socket.socket) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def __call__(self) -> bool:
        try:
            return self._exchange()
        except OSError:
            if self.sock is not None:
                self.sock.close()
            self.sock = None
            raise

    def _exchange(self) -> bool:
        if self.sock is None:
            self.sock = self._connect()
        sock = self.sock
        sock.sendall(self.spec.request)
        data = self.buffer
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += self._recv(sock)
        head, rest = data[:end].lower(), data[end + 4 :]
        status = int(head[9:12])
        at = head.find(b"\r\ncontent-length:")
        if at >= 0:
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop >= 0 else len(head)])
            while len(rest) < length:
                rest += self._recv(sock)
            self.buffer = rest[length:]
        else:  # chunked: read to the terminating chunk
            while (last := rest.find(b"\r\n0\r\n\r\n")) < 0 and not rest.startswith(b"0\r\n\r\n"):
                rest += self._recv(sock)
            self.buffer = rest[last + 7 :] if last >= 0 else rest[5:]
        if b"\r\nconnection: close" in head:
            sock.close()
            self.sock = None
        return 200 <= status < 300


@dataclass(frozen=True)
class SqlSpec:
    """One SQL statement with parameters, on its own autocommit psycopg connection."""

    dsn: str
    query: str
    params: tuple[Any, ...] = ()

    def describe(self) -> str:
        return f"SQL {self.query[:40]}"

    def open(self) -> Callable[[], bool]:
        import psycopg

        conn = psycopg.connect(self.dsn, autocommit=True)
        cursor = conn.cursor()
        query, params = self.query, self.params

        def run() -> bool:
            cursor.execute(query, params)
            cursor.fetchall()
            return True

        return run


@dataclass
class Measurement:
    """What a run of clients did: latencies in seconds, over `seconds` of wall time."""

    latencies: list[float]
    seconds: float
    errors: int = 0
    first_error: str | None = None
    concurrency: int = 0
    late_processes: int = field(default=0)
    # Clients that completed nothing in the window: the server never served them.
    starved_clients: int = field(default=0)

    @property
    def count(self) -> int:
        return len(self.latencies)

    @property
    def ops_per_s(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0

    @classmethod
    def joined(cls, turns: list[Measurement]) -> Measurement:
        """Turns of the same work as one measurement: every latency over their summed
        seconds."""
        return cls(
            latencies=[latency for turn in turns for latency in turn.latencies],
            seconds=sum(turn.seconds for turn in turns),
            errors=sum(turn.errors for turn in turns),
            concurrency=turns[0].concurrency if turns else 0,
        )

    def percentile_ms(self, fraction: float) -> float:
        if not self.latencies:
            return math.nan
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
        return ordered[index] * 1000


def _client(
    spec: HttpSpec | SqlSpec,
    start_at: float,
    deadline: float,
    quota: int | None,
    out: list[float],
    errors: list[str],
) -> None:
    try:
        op = spec.open()
    except Exception as exc:
        errors.append(f"connect: {exc}")
        return
    while time.time() < start_at:
        try:
            op()
        except Exception as exc:
            errors.append(f"warm-up: {exc}")
            return
    clock = time.perf_counter
    append = out.append
    while time.time() < deadline and (quota is None or len(out) < quota):
        began = clock()
        try:
            ok = op()
        except Exception as exc:
            errors.append(str(exc) or type(exc).__name__)
            time.sleep(0.01)  # a refused connection must not become a busy loop
            continue
        if ok:
            append(clock() - began)
        else:
            errors.append("non-2xx response")


def _process(
    spec: HttpSpec | SqlSpec,
    clients: int,
    start_at: float,
    deadline: float,
    quota: int | None,
) -> tuple[list[float], list[str], bool, float, int]:
    late = time.time() > start_at
    results: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    threads = [
        threading.Thread(target=_client, args=(spec, start_at, deadline, quota, results[i], errors))
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    finished = time.time()
    starved = sum(1 for chunk in results if not chunk)
    return [value for chunk in results for value in chunk], errors, late, finished, starved


def _entry(conn: Any, args: tuple[Any, ...]) -> None:
    try:
        conn.send(_process(*args))
    finally:
        conn.close()


def run_clients(
    spec: HttpSpec | SqlSpec,
    *,
    concurrency: int,
    duration: float | None = None,
    requests: int | None = None,
    processes: int = 2,
    max_seconds: float = 120.0,
) -> Measurement:
    """Runs `concurrency` clients for `duration` seconds or `requests` requests in all."""
    if duration is None and requests is None:
        raise ValueError("give a duration or a request count")
    nprocs = max(1, min(processes, concurrency))
    shares = [concurrency // nprocs + (1 if i < concurrency % nprocs else 0) for i in range(nprocs)]
    start_at = time.time() + START_LEAD_SECONDS
    deadline = start_at + (duration if duration is not None else max_seconds)
    quota = None if requests is None else max(1, math.ceil(requests / concurrency))
    mp = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    for share in shares:
        parent, child = mp.Pipe(duplex=False)
        proc = mp.Process(
            target=_entry, args=(child, (spec, share, start_at, deadline, quota)), daemon=True
        )
        proc.start()
        child.close()
        pipes.append(parent)
        procs.append(proc)
    latencies: list[float] = []
    errors: list[str] = []
    late = starved = 0
    finished = start_at
    try:
        for parent in pipes:
            if not parent.poll(deadline - time.time() + 60):
                raise TimeoutError("a load process did not report in time")
            values, errs, was_late, ended, idle = parent.recv()
            starved += idle
            latencies += values
            errors += errs
            late += int(was_late)
            finished = max(finished, ended)
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    seconds = (deadline - start_at) if duration is not None else (finished - start_at)
    return Measurement(
        latencies=latencies,
        seconds=seconds,
        errors=len(errors),
        first_error=errors[0] if errors else None,
        concurrency=concurrency,
        late_processes=late,
        starved_clients=starved,
    )
