"""What the usage meter and the rate limiter cost a request: `POST /events` at 8 clients
against two production servers on one database, one with both on (a limit far above the
load, so nothing is refused, but every request runs the limiter's script) and one with
both off (API_RATE_LIMIT=0, USAGE_METERING=false), measured in rounds of one turn each,
back to back. Aim: within 5 %. `ceiling_ratio` (the line with both on over the single-event
ceiling at 8 clients, bench/ceiling.py) places it against the lean path."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context, Server
from bench.loadgen import HttpSpec, Measurement

CLIENTS = 8
# A round is one turn of each server, back to back, alternating which goes first (half the
# rounds on each of two pairs of servers, see `run`). One
# stalled second (a checkpoint, a cold thread, another process) moves a turn by up to
# 30 %, and the machine's speed drifts over a run: each round's ratio compares two turns
# a few seconds apart, and the ratio reported is the median of the rounds' ratios.
ROUNDS = int(os.environ.get("BENCH_LIMITS_ROUNDS", "8"))
TURN_SECONDS = float(os.environ.get("BENCH_LIMITS_TURN", "3"))
ON = {"API_RATE_LIMIT": "1000000", "USAGE_METERING": "true"}
OFF = {"API_RATE_LIMIT": "0", "USAGE_METERING": "false"}


def _server(ctx: Context, overrides: dict[str, str]) -> Server:
    server = Server(ctx.settings)
    server.env.update(overrides)
    server.start()
    return server


def _check(server: Server, key: str, *, limited: bool) -> None:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{server.base_url}/project", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        json.load(response)
        if ("RateLimit-Limit" in response.headers) != limited:
            raise RuntimeError(f"{server.base_url}: the limiter is not as configured")


def _measure(
    ctx: Context, server: Server, key: str, *, duration: float | None = None
) -> Measurement:
    body = json.dumps({"event": "bench.limits", "email": "bench@example.com"}).encode()
    spec = HttpSpec.build(
        server.base_url,
        "/events",
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        body=body,
    )
    return ctx._run(spec, CLIENTS, duration, None)


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    key = ctx.keys()["keys"]["project"]
    # The harness's own server prepared the database and the keys; the two below serve it.
    ctx.server().stop()
    measured: dict[str, list[Measurement]] = {"on": [], "off": []}
    # Two pairs of servers, started in either order: of two servers with the same
    # settings, the one started first served 3-4 % fewer requests in every round here.
    for pair in range(2):
        starting = (("on", ON), ("off", OFF)) if pair == 0 else (("off", OFF), ("on", ON))
        servers: dict[str, Server] = {}
        try:
            for name, overrides in starting:
                servers[name] = _server(ctx, overrides)
            _check(servers["on"], key, limited=True)
            _check(servers["off"], key, limited=False)
            # Every worker of both servers connected and warm before anything counts.
            for server in servers.values():
                _measure(ctx, server, key, duration=1.0)
            for round_ in range(ROUNDS // 2):
                names = ("on", "off") if round_ % 2 == 0 else ("off", "on")
                for name in names:
                    measured[name].append(_measure(ctx, servers[name], key, duration=TURN_SECONDS))
        finally:
            for server in servers.values():
                server.stop()
    without = Measurement.joined(measured["off"])
    line = {
        **ctx.result_in_rounds(f"events_ingest_limits_c{CLIENTS}", measured["on"], measured["off"]),
        "baseline_p50_ms": round(without.percentile_ms(0.50), 3),
        "baseline_p95_ms": round(without.percentile_ms(0.95), 3),
        "baseline_p99_ms": round(without.percentile_ms(0.99), 3),
        "aim": 0.95,
    }
    yield ctx.with_ceiling(line, "events_ingest")
