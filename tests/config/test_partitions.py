"""The partition kit (config/db/partitions.py) on a table of the test's own: partitions
made ahead, idempotently; listed with their bounds; a row no partition covers kept in the
default partition and moved into its own when that is made; only partitions wholly before
the cutoff dropped, with their companions. The retention rules across projects are tested
on the events table (tests/events/test_partitions.py)."""

import datetime as dt
import uuid

import psycopg
import pytest
from django.db import connection

from config.db.partitioning import table_partition, table_unpartition
from config.db.partitions import (
    Partition,
    partition_name,
    partitions_drop_expired,
    partitions_list,
    partitions_maintain,
    partitions_make,
    period_after,
    period_start,
)
from config.registries.partitions import (
    PartitionedTable,
    register_partitioned_table,
    unregister_partitioned_table,
)

pytestmark = pytest.mark.django_db

UTC = dt.UTC
TABLE = "kit_history"


def at(year: int, month: int, day: int = 1) -> dt.datetime:
    return dt.datetime(year, month, day, tzinfo=UTC)


@pytest.fixture
def history(db):
    """A partitioned table of the test's own (gone with the test's transaction)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {TABLE} (id uuid NOT NULL, note text NOT NULL, "
            "at timestamptz NOT NULL) PARTITION BY RANGE (at)"
        )
        cursor.execute(f"CREATE INDEX {TABLE}_at_idx ON {TABLE} (at)")
    return TABLE


def insert(at_moment: dt.datetime, note: str = "") -> uuid.UUID:
    row = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {TABLE} VALUES (%s, %s, %s)", [row, note, at_moment])  # noqa: S608
    return row


def home(row: uuid.UUID) -> str | None:
    """The partition that holds a row (None: the row is gone)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {TABLE} WHERE id = %s", [row])  # noqa: S608
        found = cursor.fetchone()
    return found[0] if found else None


def test_periods_start_on_the_first_of_the_month_a_monday_or_midnight():
    moment = dt.datetime(2026, 12, 17, 15, 30, tzinfo=UTC)
    assert period_start(moment, "month") == at(2026, 12)
    assert period_after(at(2026, 12), "month") == at(2027, 1)
    assert period_start(moment, "week") == at(2026, 12, 14)
    assert period_after(at(2026, 12, 14), "week") == at(2026, 12, 21)
    assert period_start(moment, "day") == at(2026, 12, 17)


def test_partitions_are_made_ahead_once_and_listed_with_their_bounds(history):
    made = partitions_make(history, "at", now=at(2026, 11, 20), ahead=2, interval="month")

    assert made == [
        f"{TABLE}_default",
        f"{TABLE}_p20261101",
        f"{TABLE}_p20261201",
        f"{TABLE}_p20270101",
    ]
    assert partitions_make(history, "at", now=at(2026, 11, 25), ahead=2, interval="month") == []
    assert partitions_list(history) == [
        Partition(f"{TABLE}_p20261101", at(2026, 11), at(2026, 12)),
        Partition(f"{TABLE}_p20261201", at(2026, 12), at(2027, 1)),
        Partition(f"{TABLE}_p20270101", at(2027, 1), at(2027, 2)),
        Partition(f"{TABLE}_default", None, None, default=True),
    ]
    # A month later, one more ahead; every partition has the parent's index.
    assert partitions_make(history, "at", now=at(2026, 12, 2), ahead=2, interval="month") == [
        partition_name(TABLE, at(2027, 2))
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass",
            [f"{TABLE}_at_idx"],
        )
        assert cursor.fetchone()[0] == 5


def test_a_row_no_partition_covers_is_kept_and_moves_into_its_partition_when_made(history):
    partitions_make(history, "at", now=at(2026, 11, 20), ahead=1, interval="month")
    late = insert(at(2027, 6, 10), "beyond the partitions made")
    early = insert(at(2025, 2, 3), "before them")
    assert home(late) == home(early) == f"{TABLE}_default"

    made = partitions_make(history, "at", now=at(2026, 11, 21), ahead=1, interval="month")

    assert set(made) == {partition_name(TABLE, at(2025, 2)), partition_name(TABLE, at(2027, 6))}
    assert home(late) == f"{TABLE}_p20270601"
    assert home(early) == f"{TABLE}_p20250201"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT note FROM {TABLE} ORDER BY at")  # noqa: S608
        assert [row[0] for row in cursor.fetchall()] == [
            "before them",
            "beyond the partitions made",
        ]
        cursor.execute(f"SELECT count(*) FROM ONLY {TABLE}_default")  # noqa: S608
        assert cursor.fetchone()[0] == 0


def test_a_change_of_interval_fills_only_what_the_partitions_made_leave_out(history):
    partitions_make(history, "at", now=at(2026, 11, 20), ahead=0, interval="month")

    made = partitions_make(history, "at", now=at(2026, 11, 28), ahead=1, interval="week")

    # The week of 23 November is in November's partition; the next one straddles months.
    assert made == [partition_name(TABLE, at(2026, 12))]
    assert [p.upper for p in partitions_list(history) if not p.default] == [
        at(2026, 12),
        at(2026, 12, 7),
    ]


def test_only_partitions_whose_upper_bound_is_before_the_cutoff_are_dropped(history):
    partitions_make(history, "at", now=at(2026, 1, 5), ahead=0, interval="month")
    partitions_make(history, "at", now=at(2026, 3, 5), ahead=0, interval="month", since=at(2026, 1))
    january, february = insert(at(2026, 1, 31)), insert(at(2026, 2, 1))
    stray = insert(at(2020, 1, 1))  # in the default partition: only ever deleted row-wise
    companions: list[tuple[dt.datetime | None, dt.datetime | None]] = []

    dropped = partitions_drop_expired(
        history,
        before=at(2026, 2, 28),
        before_drop=lambda lower, upper: companions.append((lower, upper)),
    )

    assert dropped == [f"{TABLE}_p20260101"]
    assert companions == [(at(2026, 1), at(2026, 2))]
    assert home(january) is None
    assert home(february) == f"{TABLE}_p20260201"
    assert home(stray) == f"{TABLE}_default"


def test_a_partition_its_family_still_uses_stays_and_is_asked_again(history):
    partitions_make(history, "at", now=at(2026, 3, 5), ahead=0, interval="month", since=at(2026, 1))
    january, february = insert(at(2026, 1, 20)), insert(at(2026, 2, 20))
    in_use = {at(2026, 1)}
    asked: list[tuple[dt.datetime | None, dt.datetime]] = []

    def may_drop(*, lower, upper, before):
        asked.append((lower, before))
        return lower not in in_use

    dropped = partitions_drop_expired(history, before=at(2026, 3, 1), may_drop=may_drop)

    assert dropped == [f"{TABLE}_p20260201"]
    assert asked == [(at(2026, 1), at(2026, 3)), (at(2026, 2), at(2026, 3))]
    assert home(january) == f"{TABLE}_p20260101"
    assert home(february) is None
    in_use.clear()
    assert partitions_drop_expired(history, before=at(2026, 3, 1), may_drop=may_drop) == [
        f"{TABLE}_p20260101"
    ]


def _relkind(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table])
        return str(cursor.fetchone()[0])


def _primary_key(table: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attname FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid "
            "AND a.attnum = ANY(x.indkey) WHERE x.indrelid = to_regclass(%s) AND x.indisprimary "
            "ORDER BY array_position(x.indkey::int2[], a.attnum)",
            [table],
        )
        return [row[0] for row in cursor.fetchall()]


def _constraints(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s)", [table]
        )
        return {row[0] for row in cursor.fetchall()}


def test_a_table_with_rows_is_converted_to_partitions_and_back(world, settings):
    settings.PARTITIONS_AHEAD = 1
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE kit_plain (id uuid PRIMARY KEY, project_id uuid NOT NULL "
            "CONSTRAINT kit_plain_project_fk REFERENCES tenancy_project (id) "
            "DEFERRABLE INITIALLY DEFERRED, at timestamptz NOT NULL, "
            "n integer NOT NULL CONSTRAINT kit_plain_n_check CHECK (n >= 0))"
        )
        cursor.execute("CREATE INDEX kit_plain_due_idx ON kit_plain (at) WHERE n > 0")
        rows = {
            uuid.uuid4(): moment for moment in (at(2025, 1, 15), at(2026, 6, 1), at(2026, 11, 20))
        }
        for row, moment in rows.items():
            cursor.execute(
                "INSERT INTO kit_plain VALUES (%s, %s, %s, 1)", [row, world.project.id, moment]
            )

    with connection.schema_editor() as editor:
        table_partition(editor, table="kit_plain", column="at", now=at(2026, 11, 20))

    assert _relkind("kit_plain") == "p"
    assert _primary_key("kit_plain") == ["id", "at"]
    assert {"kit_plain_project_fk", "kit_plain_n_check", "kit_plain_pkey"} <= _constraints(
        "kit_plain"
    )
    assert _relkind("kit_plain_due_idx") == "I"  # a partitioned index
    bounds = [(p.lower, p.upper) for p in partitions_list("kit_plain") if not p.default]
    assert bounds[0] == (at(2025, 1), at(2025, 2))
    assert bounds[-1] == (at(2026, 12), at(2027, 1))
    assert len(bounds) == 24  # every month from the oldest row's to the one ahead
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, at, tableoid::regclass::text FROM kit_plain")
        found = {row: (moment, where) for row, moment, where in cursor.fetchall()}
    assert {row: moment for row, (moment, _) in found.items()} == rows
    assert {where for _, where in found.values()} == {
        "kit_plain_p20250101",
        "kit_plain_p20260601",
        "kit_plain_p20261101",
    }

    with connection.schema_editor() as editor:
        table_unpartition(editor, table="kit_plain")

    assert _relkind("kit_plain") == "r"
    assert _primary_key("kit_plain") == ["id"]
    assert {"kit_plain_project_fk", "kit_plain_n_check", "kit_plain_pkey"} <= _constraints(
        "kit_plain"
    )
    assert _relkind("kit_plain_due_idx") == "i"
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, at FROM kit_plain")
        assert dict(cursor.fetchall()) == rows
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'kit_plain_p2%%'")
        assert cursor.fetchone()[0] == 0


def test_a_table_whose_unique_index_lacks_the_time_column_is_not_converted(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE kit_unique (id uuid PRIMARY KEY, code text NOT NULL UNIQUE, "
            "at timestamptz NOT NULL)"
        )
    with (
        pytest.raises(ValueError, match="kit_unique_code_key"),
        connection.schema_editor() as editor,
    ):
        table_partition(editor, table="kit_unique", column="at")
    assert _relkind("kit_unique") == "r"


@pytest.mark.django_db(transaction=True)
def test_a_table_whose_lock_is_not_had_in_time_is_left_for_the_next_run(settings, caplog):
    settings.PARTITION_LOCK_TIMEOUT_SECONDS = 0.2
    settings.PARTITIONS_AHEAD = 0
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE kit_locked (id uuid NOT NULL, at timestamptz NOT NULL) "
            "PARTITION BY RANGE (at)"
        )
    try:
        partitions_make("kit_locked", "at", now=at(2026, 11, 20), ahead=0, interval="month")
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO kit_locked VALUES (%s, %s)", [uuid.uuid4(), at(2027, 5, 2)])
        declared = register_partitioned_table(
            PartitionedTable(table="kit_locked", column="at", retention_days=lambda: None)
        )
        # Another session reads the default partition: attaching May's partition, which
        # must check it, waits for that session's lock.
        params = connection.get_connection_params()
        with psycopg.connect(**params) as other:
            other.execute("SELECT count(*) FROM kit_locked_default").fetchone()
            try:
                done = partitions_maintain(now=at(2026, 11, 20))
            finally:
                other.rollback()
        assert "kit_locked" not in done
        assert "events_event" in done  # the other tables went on
        assert "Partition maintenance of kit_locked waited too long" in caplog.text
        assert [p.name for p in partitions_list("kit_locked")] == [
            "kit_locked_p20261101",
            "kit_locked_default",
        ]

        done = partitions_maintain(now=at(2026, 11, 20))

        assert done["kit_locked"].made == ["kit_locked_p20270501"]
    finally:
        unregister_partitioned_table("kit_locked")
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE kit_locked")
    assert declared.table == "kit_locked"
