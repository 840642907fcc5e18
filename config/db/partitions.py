"""Tables partitioned by time: partitions made ahead, listed with their bounds, and dropped
whole once no project's retention may keep a row of them.

A partitioned table (declared through `config.registries.partitions`) has one range
partition per interval of its time column (`PARTITION_INTERVAL`: a month by default),
named `<table>_p<first day>`, and a default partition, `<table>_default`.

The default partition is the safety net: a row whose time no partition covers (the beat
stopped for longer than `PARTITIONS_AHEAD` intervals, or a clock moved far) is stored
there rather than refused, so an insert never fails for want of a partition. When the
partition of its interval is made, its rows move out of the default partition into it,
in the same transaction; the default partition is empty in a healthy system, which keeps
attaching a partition (PostgreSQL checks the default partition holds no row of the new
range) cheap. Its rows are never dropped whole: the families' row-wise retention purges
delete them like any row.

Dropping: a partition goes when its upper bound is at or before now minus the longest
retention that any project may keep the table's rows for (the family's function), and,
for a family that names one, its check says the partition's rows are no longer in use
(a run's timeline stays while the run waits, however old). Every
project's own, shorter policy keeps being applied row by row inside the partitions by the
family's purge; the drop only removes what no policy keeps. Making and dropping take
locks on the parent table: each waits at most `PARTITION_LOCK_TIMEOUT_SECONDS` and a run
that times out leaves things as they were for the next run.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils.module_loading import import_string

from config.registries.partitions import PartitionedTable, partitioned_tables
from config.runtime import clock

logger = logging.getLogger("config.db.partitions")

Interval = Literal["month", "week", "day"]
INTERVALS: tuple[Interval, ...] = ("month", "week", "day")

# Each partition of the parent with its bounds as values (PostgreSQL keeps them as an
# expression; the regular expressions read the literals of `FROM (...) TO (...)` back and
# the casts parse them, whatever the session's time zone). MINVALUE/MAXVALUE bounds,
# which the kit never makes, read as null.
_LIST = (
    "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', "
    "(regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']*)''\\)'))[1]"
    "::timestamptz, "
    "(regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']*)''\\)'))[1]"
    "::timestamptz "
    "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = to_regclass(%s) ORDER BY 3 NULLS LAST, 1"
)
_COLUMNS = (
    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) "
    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
)


@dataclass(frozen=True)
class Partition:
    """One partition: a range [lower, upper) of the time column, or the default one."""

    name: str
    lower: dt.datetime | None
    upper: dt.datetime | None
    default: bool = False


def period_start(moment: dt.datetime, interval: Interval) -> dt.datetime:
    """The start (UTC) of the interval that holds `moment`: the first of its month, the
    Monday of its week, or its day."""
    day = moment.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if interval == "month":
        return day.replace(day=1)
    if interval == "week":
        return day - dt.timedelta(days=day.weekday())
    return day


def period_after(start: dt.datetime, interval: Interval) -> dt.datetime:
    """The start of the interval after the one starting at `start`."""
    if interval == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start + dt.timedelta(days=7 if interval == "week" else 1)


def partition_interval() -> Interval:
    interval = settings.PARTITION_INTERVAL
    if interval not in INTERVALS:
        raise ValueError(f"PARTITION_INTERVAL must be one of {', '.join(INTERVALS)}.")
    return cast(Interval, interval)


def partitions_list(table: str) -> list[Partition]:
    """The partitions of `table` with their bounds, by lower bound, the default last."""
    with connection.cursor() as cursor:
        cursor.execute(_LIST, [table])
        rows = cursor.fetchall()
    return [
        Partition(name=name, lower=lower, upper=upper, default=bool(default))
        for name, default, lower, upper in rows
    ]


def default_name(table: str) -> str:
    return f"{table}_default"


def partition_name(table: str, lower: dt.datetime) -> str:
    return f"{table}_p{lower:%Y%m%d}"


def _literal(moment: dt.datetime) -> str:
    # A bound is part of the DDL, which takes no parameters; the value is our own.
    return f"'{moment.astimezone(dt.UTC).isoformat()}'::timestamptz"


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _execute(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description is not None else []


class _Held:
    """Within a transaction: an advisory lock on the table's maintenance (two runs never
    make the same partition at once) and a bounded wait for the table's locks. The
    previous lock timeout is restored at the end, for a caller's enclosing transaction."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.previous = ""

    def __enter__(self) -> _Held:
        timeout = int(settings.PARTITION_LOCK_TIMEOUT_SECONDS * 1000)
        self.previous = _execute("SHOW lock_timeout")[0][0]
        _execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"partitions:{self.table}"])
        _execute("SELECT set_config('lock_timeout', %s, true)", [f"{timeout}ms"])
        return self

    def __exit__(self, *exc: object) -> None:
        if connection.needs_rollback or exc[0] is not None:
            return
        _execute("SELECT set_config('lock_timeout', %s, true)", [self.previous])


def _gaps(
    lower: dt.datetime, upper: dt.datetime, taken: list[tuple[dt.datetime, dt.datetime]]
) -> list[tuple[dt.datetime, dt.datetime]]:
    """The parts of [lower, upper) that no range of `taken` covers (partitions made at
    another interval setting stay as they are; only what they leave out is made)."""
    gaps: list[tuple[dt.datetime, dt.datetime]] = []
    start = lower
    for low, high in sorted(taken):
        if high <= start or low >= upper:
            continue
        if low > start:
            gaps.append((start, low))
        start = max(start, high)
        if start >= upper:
            break
    if start < upper:
        gaps.append((start, upper))
    return gaps


def _periods(first: dt.datetime, last: dt.datetime, interval: Interval) -> list[dt.datetime]:
    """The starts of the intervals from the one holding `first` to the one holding `last`."""
    starts = [period_start(first, interval)]
    while period_after(starts[-1], interval) <= last:
        starts.append(period_after(starts[-1], interval))
    return starts


def partitions_make(
    table: str,
    column: str,
    *,
    now: dt.datetime | None = None,
    ahead: int | None = None,
    interval: Interval | None = None,
    since: dt.datetime | None = None,
    storage: str = "",
) -> list[str]:
    """Makes, if missing, the default partition and the partitions of the current interval
    and the `ahead` ones after it (`PARTITIONS_AHEAD`), of every interval from `since` on,
    and of every interval the default partition holds rows of (those rows move into it).
    Each is made `WITH (storage)` when given. Idempotent; returns the names made."""
    now = now or clock.now()
    ahead = settings.PARTITIONS_AHEAD if ahead is None else ahead
    interval = interval or partition_interval()
    made: list[str] = []
    with transaction.atomic(), _Held(table):
        existing = partitions_list(table)
        default = default_name(table)
        if not any(partition.default for partition in existing):
            _execute(
                f"CREATE TABLE {_quote(default)} PARTITION OF {_quote(table)} DEFAULT"
                f"{_with(storage)}"
            )
            made.append(default)
        current = period_start(now, interval)
        last = current
        for _ in range(ahead):
            last = period_after(last, interval)
        starts = _periods(min(since, current) if since else current, last, interval)
        # The intervals the default partition holds rows of (it is small: empty when
        # the partitions are made in time).
        held = _execute(
            f"SELECT DISTINCT date_trunc(%s, {_quote(column)} AT TIME ZONE 'UTC') "  # noqa: S608
            f"AT TIME ZONE 'UTC' FROM ONLY {_quote(default)}",
            [interval],
        )
        starts = sorted({*starts, *(row[0] for row in held)})
        taken = [
            (partition.lower, partition.upper)
            for partition in existing
            if partition.lower is not None and partition.upper is not None
        ]
        for start in starts:
            for lower, upper in _gaps(start, period_after(start, interval), taken):
                made.append(_attach(table, column, lower=lower, upper=upper, storage=storage))
                taken.append((lower, upper))
    if made:
        logger.info("Made partitions of %s: %s", table, ", ".join(made))
    return made


def _with(storage: str) -> str:
    # Storage parameters are DDL, which takes no parameters; the value is the family's own.
    return f" WITH ({storage})" if storage else ""


def _attach(
    table: str, column: str, *, lower: dt.datetime, upper: dt.datetime, storage: str = ""
) -> str:
    """Makes the partition [lower, upper) as a table of its own, moves into it the default
    partition's rows of that range, and attaches it (which builds the parent's indexes on
    it and checks the default partition holds no row of it any more)."""
    name = partition_name(table, lower)
    columns = ", ".join(_quote(row[0]) for row in _execute(_COLUMNS, [table]))
    quoted, key = _quote(name), _quote(column)
    _execute(
        f"CREATE TABLE {quoted} (LIKE {_quote(table)} "
        f"INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE){_with(storage)}"
    )
    _execute(
        # S608: names from the catalog; bounds are our own values.
        f"WITH moved AS (DELETE FROM ONLY {_quote(default_name(table))} "  # noqa: S608
        f"WHERE {key} >= {_literal(lower)} AND {key} < {_literal(upper)} "
        f"RETURNING {columns}) INSERT INTO {quoted} ({columns}) SELECT {columns} FROM moved"
    )
    _execute(
        f"ALTER TABLE {_quote(table)} ATTACH PARTITION {quoted} "
        f"FOR VALUES FROM ({_literal(lower)}) TO ({_literal(upper)})"
    )
    return name


def partitions_drop_expired(
    table: str,
    *,
    before: dt.datetime,
    before_drop: Callable[..., None] | None = None,
    may_drop: Callable[..., bool] | None = None,
) -> list[str]:
    """Drops the range partitions whose upper bound is at or before `before` (no project
    may keep a row of them) and that `may_drop(lower=, upper=, before=)`, when given,
    lets go, each in its own transaction after `before_drop(lower=, upper=)` deleted the
    rows elsewhere that go with its rows. Returns the names dropped."""
    dropped: list[str] = []
    for partition in partitions_list(table):
        if partition.default or partition.upper is None or partition.upper > before:
            continue
        with transaction.atomic(), _Held(table):
            if may_drop is not None and not may_drop(
                lower=partition.lower, upper=partition.upper, before=before
            ):
                logger.info("Partition %s of %s is still in use", partition.name, table)
                continue
            if before_drop is not None:
                before_drop(lower=partition.lower, upper=partition.upper)
            _execute(f"DROP TABLE {_quote(partition.name)}")
        dropped.append(partition.name)
        logger.info("Dropped partition %s of %s (upper bound %s)", partition.name, table, before)
    return dropped


def _resolved(handler: Callable[..., Any] | str) -> Callable[..., Any]:
    return import_string(handler) if isinstance(handler, str) else handler


@dataclass(frozen=True)
class Maintained:
    """What one maintenance run did to a table."""

    made: list[str]
    dropped: list[str]


def partitioned_table_maintain(
    declared: PartitionedTable, *, now: dt.datetime | None = None
) -> Maintained:
    """Makes the table's partitions ahead, then drops those no project's retention keeps."""
    now = now or clock.now()
    made = partitions_make(declared.table, declared.column, now=now, storage=declared.storage)
    days = _resolved(declared.retention_days)()
    if days is None:
        return Maintained(made=made, dropped=[])
    before_drop = _resolved(declared.before_drop) if declared.before_drop else None
    may_drop = _resolved(declared.may_drop) if declared.may_drop else None
    dropped = partitions_drop_expired(
        declared.table,
        before=now - dt.timedelta(days=days),
        before_drop=before_drop,
        may_drop=may_drop,
    )
    return Maintained(made=made, dropped=dropped)


def partitions_maintain(*, now: dt.datetime | None = None) -> dict[str, Maintained]:
    """Maintains every declared table (the beat's `partitions.maintain`). A table whose
    locks were not had in time is left for the next run; the others go on."""
    done: dict[str, Maintained] = {}
    for declared in partitioned_tables():
        try:
            done[declared.table] = partitioned_table_maintain(declared, now=now)
        except OperationalError:
            logger.warning("Partition maintenance of %s waited too long", declared.table)
    return done
