"""The local SMTP server of the email benchmarks, in a process of its own (as a real mail
server is elsewhere): aiosmtpd accepting every message and noting when each arrived.

`python -m bench.smtp_sink PORT` serves until its standard input closes; each line
`take` on standard input is answered with one line, the JSON list of the arrival times
(`time.monotonic()`, the same clock in every process) since the last `take`; each line
`latencies` with the seconds from ingest to arrival of the messages since the last one
whose subject is `t=<time.time() at ingest>` (the automations benchmark's)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from typing import Any

from bench.harness import StdioProcess, _free_port

_STAMP = b"\nSubject: t="


class _Counting:
    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.latencies: list[float] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        now = time.time()
        content = envelope.content
        start = content.find(_STAMP)
        latency = None
        if start >= 0:
            start += len(_STAMP)
            end = content.find(b"\r", start)
            latency = now - float(content[start : end if end >= 0 else None])
        with self.lock:
            self.arrivals.append(time.monotonic())
            if latency is not None:
                self.latencies.append(latency)
        return "250 OK"

    def take(self) -> list[float]:
        with self.lock:
            taken, self.arrivals = self.arrivals, []
        return taken

    def take_latencies(self) -> list[float]:
        with self.lock:
            taken, self.latencies = self.latencies, []
        return taken


def serve(port: int) -> None:
    from aiosmtpd.smtp import SMTP

    handler = _Counting()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: SMTP(handler), "127.0.0.1", port)
        print("ready", flush=True)
        # Commands come on stdin, read by a thread: the loop only serves SMTP.
        await loop.run_in_executor(None, _commands, handler)
        server.close()

    asyncio.run(main())


def _commands(handler: _Counting) -> None:
    for line in sys.stdin:
        command = line.strip()
        if command == "take":
            print(json.dumps(handler.take()), flush=True)
        elif command == "latencies":
            print(json.dumps(handler.take_latencies()), flush=True)


class SmtpSink(StdioProcess):
    """The server's process, seen from the benchmark."""

    def __init__(self) -> None:
        self.port = _free_port()
        super().__init__("bench.smtp_sink", str(self.port))
        if self.read_line().strip() != "ready":
            self.stop()
            raise RuntimeError("the SMTP sink did not start")

    def take(self) -> list[float]:
        """The arrival times since the last take, in order."""
        return sorted(self._ask("take"))

    def take_latencies(self) -> list[float]:
        """Ingest-to-arrival seconds of the stamped messages since the last call."""
        return self._ask("latencies")

    def _ask(self, command: str) -> list[float]:
        self.write_line(command)
        return list(json.loads(self.read_line()))


if __name__ == "__main__":
    serve(int(sys.argv[1]))
