"""The soak's pieces work (the soak itself runs only under `make soak`)."""

import datetime as dt
import os
from typing import Any

import pytest

from bench.skewed_clock import clock_skew
from bench.soak import (
    BATCH_SIZE,
    FLAT,
    NEW_PER_BATCH,
    RESENT_PER_BATCH,
    batch_events,
    spread,
    summary,
    trend,
)
from bench.soak_partitions import OFFSET_ENV, next_month, skew_for_boundary
from bench.soak_worker import StatementClock
from config.runtime import clock


def _step(events_total: int, **figures: float) -> dict[str, Any]:
    line: dict[str, Any] = {field: 10.0 for field in FLAT}
    line.update(figures, events_total=events_total, table_mb=events_total / 1000)
    return line


def test_spread_is_the_largest_figure_over_the_smallest_less_one() -> None:
    assert spread([100.0, 110.0, 95.0]) == pytest.approx(110 / 95 - 1)
    assert spread([4.0]) == 0
    assert spread([]) is None
    assert spread([0.0, 3.0]) is None


def test_the_trend_is_the_last_third_of_the_steps_against_the_first() -> None:
    assert trend([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]) == pytest.approx(55 / 15 - 1)
    assert trend([10.0, 99.0, 10.0]) == 0
    assert trend([]) is None
    assert trend([0.0, 3.0, 4.0]) is None


def test_the_summary_says_which_figures_got_worse_than_the_tolerance() -> None:
    steps = [
        _step(1_000_000, ingest_events_per_s=20_000.0, claim_ms=1.0, sweep_ms=9.0),
        _step(2_000_000, ingest_events_per_s=9_000.0, claim_ms=1.1, sweep_ms=8.0),
        _step(3_000_000, ingest_events_per_s=17_500.0, claim_ms=1.2, sweep_ms=4.0),
    ]

    line = summary(steps)

    assert line["name"] == "soak_summary"
    assert line["steps"] == 3
    assert line["events_total"] == 3_000_000
    # One slow step in the middle moves the spread, not the trend.
    assert line["spread"]["ingest_events_per_s"] == pytest.approx(20_000 / 9_000 - 1, abs=1e-4)
    assert line["trend"]["ingest_events_per_s"] == pytest.approx(-0.125)
    assert line["held"]["ingest_events_per_s"] is True
    # A cost that rose 20 % did not hold; one that fell by half did.
    assert line["trend"]["claim_ms"] == pytest.approx(0.2)
    assert line["held"]["claim_ms"] is False
    assert line["held"]["sweep_ms"] is True
    assert line["flat"] is False
    assert line["table_mb_per_million_events"] == [1000.0, 1000.0, 1000.0]


def test_a_rate_that_fell_more_than_the_tolerance_did_not_hold() -> None:
    steps = [_step(1_000_000, process_events_per_s=3_000.0), _step(2_000_000)]
    steps[1]["process_events_per_s"] = 2_400.0

    assert summary(steps)["held"]["process_events_per_s"] is False


def test_a_soak_whose_figures_all_held_is_flat() -> None:
    steps = [_step(1_000_000), _step(2_000_000, purge_ms=11.4)]

    line = summary(steps)

    assert line["flat"] is True
    assert all(line["held"].values())


def test_each_batch_resends_keys_of_the_clients_previous_batch() -> None:
    first, second = batch_events("t", 0), batch_events("t", 1)
    first_keys = [item["idempotency_key"] for item in first]
    second_keys = [item["idempotency_key"] for item in second]

    assert len(first) == len(second) == BATCH_SIZE
    # The first batch sends some of its own keys twice; later ones resend the previous.
    assert len(set(first_keys)) == NEW_PER_BATCH
    assert len(set(second_keys) - set(first_keys)) == NEW_PER_BATCH
    assert len(set(second_keys) & set(first_keys)) == RESENT_PER_BATCH


def test_the_api_stores_the_new_events_of_a_soak_batch_and_answers_the_rest_as_duplicates(
    api: Any, world: Any
) -> None:
    key = world.keys["project"]

    first = api.post("/events/batch", {"events": batch_events("api", 0)}, key=key)
    second = api.post("/events/batch", {"events": batch_events("api", 1)}, key=key)

    counts = [
        (r.json()["data"]["accepted"], r.json()["data"]["duplicates"]) for r in (first, second)
    ]
    assert counts == [(NEW_PER_BATCH, RESENT_PER_BATCH)] * 2


def test_the_workers_statement_clock_groups_a_statement_whatever_its_lists_and_savepoints() -> None:
    clock = StatementClock()

    def execute(sql: str, *args: Any) -> str:
        return sql

    for sql in (
        'SELECT 1 FROM "t" WHERE "id" IN (%s, %s, %s) AND "a" = %s',
        'SELECT 1 FROM "t" WHERE "id" IN (%s, %s) AND "a" = %s',
        'SAVEPOINT "s1401_x3"',
        'SAVEPOINT "s1401_x4"',
    ):
        assert clock(execute, sql, None, False, {}) == sql

    assert {(line["sql"], line["calls"]) for line in clock.costliest(5)} == {
        ('SELECT 1 FROM "t" WHERE "id" IN (%s...) AND "a" = %s', 2),
        ('SAVEPOINT "s"', 2),
    }


def test_the_boundary_offset_puts_the_next_month_that_many_seconds_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(OFFSET_ENV, raising=False)
    monkeypatch.delenv("BENCH_RSGI_APPLICATION", raising=False)
    assert next_month(dt.datetime(2026, 12, 31, 23, tzinfo=dt.UTC)) == dt.datetime(
        2027, 1, 1, tzinfo=dt.UTC
    )

    offset = skew_for_boundary(120)

    moved = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset)
    remaining = (next_month(moved - dt.timedelta(seconds=1)) - moved).total_seconds()
    assert 115 < remaining <= 120
    assert float(os.environ[OFFSET_ENV]) == offset
    assert os.environ["BENCH_RSGI_APPLICATION"] == "bench.skewed_rsgi:application"


def test_the_skewed_servers_clock_runs_ahead_by_the_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OFFSET_ENV, "86400")
    try:
        clock_skew()
        ahead = clock.now() - dt.datetime.now(dt.UTC)
    finally:
        clock.set_source(None)

    assert dt.timedelta(hours=23, minutes=59) < ahead <= dt.timedelta(days=1)
