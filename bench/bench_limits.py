"""What the usage meter and the rate limiter cost a request: `POST /events` at 8 clients
against two production servers on one database, one with both on (a limit far above the
load, so nothing is refused, but every request runs the limiter's script) and one with
both off (API_RATE_LIMIT=0, USAGE_METERING=false), measured in rounds of one turn each,
back to back. Aim: within 5 %."""

from __future__ import annotations

import json
import os
import statistics
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context, Server, log
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


def _merged(runs: list[Measurement]) -> dict[str, float]:
    latencies = sorted(latency for run in runs for latency in run.latencies)
    merged = Measurement(latencies=latencies, seconds=sum(run.seconds for run in runs))
    return {
        "ops_per_s": sum(run.ops_per_s for run in runs) / len(runs),
        "p50_ms": merged.percentile_ms(0.50),
        "p95_ms": merged.percentile_ms(0.95),
        "p99_ms": merged.percentile_ms(0.99),
        "errors": sum(run.errors for run in runs),
    }


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
    with_limits, without = _merged(measured["on"]), _merged(measured["off"])
    rounds = [
        on_turn.ops_per_s / off_turn.ops_per_s
        for on_turn, off_turn in zip(measured["on"], measured["off"], strict=True)
        if off_turn.ops_per_s
    ]
    ratio = statistics.median(rounds) if rounds else None
    log(
        "meter and rate limiter on/off by round: "
        + ", ".join(f"{value:.3f}" for value in rounds)
        + (f"; median {ratio:.3f}" if ratio is not None else "")
    )
    yield {
        "name": f"events_ingest_limits_c{CLIENTS}",
        "ops_per_s": round(with_limits["ops_per_s"], 1),
        "p50_ms": round(with_limits["p50_ms"], 3),
        "p95_ms": round(with_limits["p95_ms"], 3),
        "p99_ms": round(with_limits["p99_ms"], 3),
        "baseline_ops_per_s": round(without["ops_per_s"], 1),
        "baseline_p50_ms": round(without["p50_ms"], 3),
        "baseline_p95_ms": round(without["p95_ms"], 3),
        "baseline_p99_ms": round(without["p99_ms"], 3),
        "ratio": round(ratio, 4) if ratio is not None else None,
        "ratio_of_means": round(with_limits["ops_per_s"] / without["ops_per_s"], 4)
        if without["ops_per_s"]
        else None,
        "round_ratios": [round(value, 4) for value in rounds],
        "aim": 0.95,
        "concurrency": CLIENTS,
        "errors": int(with_limits["errors"] + without["errors"]),
    }
