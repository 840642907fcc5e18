"""`python -m bench [--only NAME[,NAME]] [--duration SECONDS]`: one JSON line per result."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import bench
from bench.harness import RESULTS_DIR, Context, log

# Each benchmark stops by itself: a hung server or client cannot keep the run going.
BENCH_TIMEOUT_SECONDS = int(os.environ.get("BENCH_TIMEOUT", "900"))
# Every line carries these, in this order (null where a benchmark measures no such
# figure, e.g. a worker's memory); what else a benchmark reports follows them.
FIELDS = ("name", "ops_per_s", "p50_ms", "p95_ms", "p99_ms", "baseline_ops_per_s", "ratio")


def line_shaped(result: dict[str, Any]) -> dict[str, Any]:
    return {**{field: result.get(field) for field in FIELDS}, **result}


class Stop(Exception):
    pass


class TimedOut(Exception):
    pass


def discover() -> list[str]:
    return sorted(
        name.removeprefix("bench_")
        for _, name, _ in pkgutil.iter_modules(bench.__path__)
        if name.startswith("bench_")
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", help="comma-separated names: bench_<name>.py")
    parser.add_argument("--duration", type=float, help="seconds per measurement")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args()

    names = discover()
    if args.list:
        print("\n".join(names))
        return 0
    if args.only:
        wanted = [name.strip().removeprefix("bench_") for name in args.only.split(",")]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            log(f"no such benchmark: {', '.join(unknown)} (have: {', '.join(names)})")
            return 2
        # In the full run's order: the benchmarks of a run share its database, and one
        # run earlier may leave what a later one sets up again (an audience of the same
        # name, a published automation on the same trigger).
        names = [name for name in names if name in wanted]

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGALRM:
            raise TimedOut(f"over {BENCH_TIMEOUT_SECONDS} s (BENCH_TIMEOUT)")
        raise Stop(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
        signal.signal(signum, on_signal)

    ctx = Context()
    if args.duration:
        ctx.settings.duration = args.duration
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS_DIR / time.strftime("%Y%m%d-%H%M%S.jsonl")
    failed = False
    try:
        with Path(out_path).open("w") as out:
            for name in names:
                log(f"running {name}")
                signal.alarm(BENCH_TIMEOUT_SECONDS)
                module = importlib.import_module(f"bench.bench_{name}")
                try:
                    for result in module.run(ctx):
                        line = json.dumps(line_shaped(result))
                        print(line, flush=True)
                        out.write(line + "\n")
                except Stop:
                    raise
                except TimedOut as exc:
                    failed = True
                    log(f"{name} stopped: {exc}")
                except Exception as exc:
                    failed = True
                    log(f"{name} failed: {exc!r}")
                finally:
                    signal.alarm(0)
    except Stop as stop:
        log(f"stopped ({stop})")
        failed = True
    finally:
        signal.alarm(0)
        ctx.close()
    log(f"results in {out_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
