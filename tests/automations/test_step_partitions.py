"""Run steps partitioned by their run's start: a run's whole timeline in one partition, its
reads and updates pruned to it, and a partition dropped only when no project keeps a run of
its period and no run of its period is unfinished (a run may wait for months)."""

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from automations.models import AutomationRun, RunStatus, RunStep
from automations.services.retention import runs_purge_expired
from config.celery import maintain_partitions
from config.db.partitions import partition_name, partitions_list
from tests.automations.api_driver import automation, drain, event, steps_of
from tests.automations.factories import AutomationRunFactory, RunStepFactory, simple_definition

pytestmark = pytest.mark.django_db

UTC = dt.UTC
TABLE = "automations_runstep"


def at(year: int, month: int, day: int = 1, hour: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, tzinfo=UTC)


def _homes(run_id) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT tableoid::regclass::text FROM {TABLE} WHERE run_id = %s",  # noqa: S608
            [run_id],
        )
        return {row[0] for row in cursor.fetchall()}


def _scanned(plan: object) -> set[str]:
    """The tables a plan (EXPLAIN's JSON) reads."""
    if isinstance(plan, dict):
        names = {plan["Relation Name"]} if "Relation Name" in plan else set()
        return names.union(*(_scanned(value) for value in plan.values()))
    if isinstance(plan, list):
        return set().union(*(_scanned(value) for value in plan))
    return set()


def _waiting_run(api, key, clock, when: dt.datetime) -> AutomationRun:
    """A live run started at `when` through the API and the workers, waiting a day."""
    clock.set(when)
    event(api, key, "order.completed", email=f"buyer-{when:%Y%m%d}@example.net")
    drain()
    return AutomationRun.objects.get(created_at=when)


def _run_page(api, key, run: AutomationRun) -> dict:
    response = api.get(f"/automations/{run.automation_id}/runs/{run.id}", key=key)
    assert response.status_code == 200, response.json()
    return dict(response.json()["data"])


def test_a_runs_timeline_lives_in_its_starts_partition_and_its_reads_prune_to_it(
    api, key, clock, settings
):
    settings.PARTITIONS_AHEAD = 0
    clock.set(at(2025, 1, 20))
    automation(api, key, simple_definition())
    january = _waiting_run(api, key, clock, at(2025, 1, 31, 23))
    maintain_partitions()
    assert _homes(january.id) == {partition_name(TABLE, at(2025, 1))}

    # January's run resumes in February: its later steps, and the update of its waiting
    # one, stay in January's partition.
    clock.set(at(2025, 2, 2))
    statements: list[str] = []

    def seen(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(seen):
        drain()
    assert _homes(january.id) == {partition_name(TABLE, at(2025, 1))}
    advanced = list(statements)
    statements.clear()
    with connection.execute_wrapper(seen):
        page = _run_page(api, key, january)
    # The run's page reads its steps by its start too.
    [read] = [sql for sql in statements if f'FROM "{TABLE}"' in sql]
    assert '"run_created_at" =' in read
    assert steps_of(page) == [
        ("pause", "completed", None),
        ("done", "completed", None),
    ]
    assert set(RunStep.objects.filter(run=january).values_list("run_created_at", flat=True)) == {
        january.created_at
    }
    # The engine reads a run's timeline by its start, which reads its partition only.
    reads = [sql for sql in advanced if f'FROM "{TABLE}"' in sql and "SELECT" in sql]
    assert reads
    assert all("run_created_at = ANY" in sql for sql in reads)
    # ... and updates a step in its partition only.
    updates = [sql for sql in advanced if sql.startswith(f'UPDATE "{TABLE}"')]
    assert updates
    assert all('"run_created_at" = v._match0' in sql for sql in updates)
    february = _waiting_run(api, key, clock, at(2025, 2, 10))
    maintain_partitions()
    assert _homes(february.id) == {partition_name(TABLE, at(2025, 2))}
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN (FORMAT JSON) SELECT * FROM {TABLE} t "  # noqa: S608
            "WHERE t.run_id = ANY(%s) AND t.run_created_at = ANY(%s)",
            [[january.id], [january.created_at]],
        )
        assert _scanned(cursor.fetchone()[0]) == {partition_name(TABLE, at(2025, 1))}


def test_a_steps_partition_goes_only_when_no_run_of_its_period_is_kept(
    api, key, clock, settings, world
):
    settings.PARTITIONS_AHEAD = 0
    for project, days in [(world.project, 30), (world.other_project, 400)]:
        project.run_retention_days = days
        project.save()
    world.foreign_project.run_retention_days = 30
    world.foreign_project.save()
    clock.set(at(2025, 3, 1))
    automation(api, key, simple_definition())
    live = _waiting_run(api, key, clock, at(2025, 3, 10))
    march = partition_name(TABLE, at(2025, 3))
    maintain_partitions()
    assert _homes(live.id) == {march}

    # Months on, the project with the longer retention may still keep a run of March.
    clock.set(at(2025, 6, 15))
    assert maintain_partitions()[TABLE]["dropped"] == []

    # No project keeps runs that old any more, but March's run waits still (a run may
    # wait for months): its timeline stays.
    world.other_project.run_retention_days = 30
    world.other_project.save()
    AutomationRun.objects.filter(id=live.id).update(status=RunStatus.WAITING, completed_at=None)
    assert maintain_partitions()[TABLE]["dropped"] == []
    assert _homes(live.id) == {march}

    # Finished after the cutoff (now less the longest retention): still kept.
    AutomationRun.objects.filter(id=live.id).update(
        status=RunStatus.COMPLETED, completed_at=at(2025, 5, 20)
    )
    assert maintain_partitions()[TABLE]["dropped"] == []

    # Once it is expired for every project, the partition goes; the run itself goes with
    # the next purge (its own policy expired it too).
    clock.set(at(2025, 6, 25))
    assert maintain_partitions()[TABLE]["dropped"] == [march]
    assert march not in {p.name for p in partitions_list(TABLE)}
    assert not RunStep.objects.filter(run_id=live.id).exists()
    assert runs_purge_expired() == 1
    assert not AutomationRun.objects.filter(id=live.id).exists()


def test_each_partition_keeps_the_tables_fillfactor(clock, settings):
    settings.PARTITIONS_AHEAD = 1
    clock.set(at(2031, 4, 2))
    maintain_partitions()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reloptions FROM pg_class c WHERE c.relname = %s",
            [partition_name(TABLE, at(2031, 5))],
        )
        assert cursor.fetchone()[0] == ["fillfactor=70"]


def test_the_migration_converts_the_steps_table_keeping_its_rows_and_back(world, clock):
    """Migration 0005 on a table with rows (in this test's transaction: rolled back)."""
    clock.set(at(2024, 7, 9, 8))
    run = AutomationRunFactory(automation__project=world.project, waiting=True)
    # Checked now, not at commit: unapplying later migrations alters the runs' table,
    # which PostgreSQL refuses while the run's deferred checks are pending.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    MigrationExecutor(connection).migrate([("automations", "0004_trigger_stamp")])
    assert _relkind(TABLE) == "r"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (id, run_id, step_key, visit, type, status, started_at, "  # noqa: S608
            "created_at, sequence) VALUES (gen_random_uuid(), %s, 'pause', 1, 'wait', "
            "'waiting', %s, %s, 1)",
            [run.id, run.created_at, run.created_at],
        )

    MigrationExecutor(connection).migrate(latest())

    assert _relkind(TABLE) == "p"
    step = RunStep.objects.get(run=run)
    assert step.run_created_at == run.created_at
    assert _homes(run.id) == {partition_name(TABLE, at(2024, 7))}
    # The unique key that makes a step execute once holds on the partitioned table.
    with pytest.raises(IntegrityError), transaction.atomic():
        RunStepFactory(run=run, step_key="pause", visit=1)

    MigrationExecutor(connection).migrate([("automations", "0004_trigger_stamp")])
    assert _relkind(TABLE) == "r"
    MigrationExecutor(connection).migrate(latest())
    assert RunStep.objects.get(run=run).id == step.id


def _relkind(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table])
        return str(cursor.fetchone()[0])


def latest() -> list[tuple[str, str]]:
    """Every app's newest migration: the models' own columns, whatever came after the
    one under test."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
