"""A worker killed mid-commit: the chunk it held is applied again, whole, by the next
worker once its lease runs out, and no row is applied twice (docs/API.md, Imports)."""

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from contacts.models import Contact
from events.models import Event
from imports.conf import lease_seconds
from imports.models import Import, ImportChunk
from imports.services import commit
from imports.services.commit import IMPORT_QUEUE, _ApplyChunks, import_chunk_apply
from tests.imports.conftest import csv_text, drain

ROOT = Path(__file__).resolve().parents[2]


class Killed(Exception):
    """Stands for the death of the worker: its transaction never commits."""


def _committing(imports, rows=4, **fields):
    data = imports.uploaded(
        csv_text("Email,Plan", *(f"p{n}@example.com,pro" for n in range(rows))),
        {"Email": "email", "Plan": "fields.plan"},
        automation_effects="trigger",
        **fields,
    )
    preview = imports.previewed(data["id"])
    assert imports.commit(data["id"], preview["prepared_action_id"]).status_code == 202
    return data["id"]


def _applied_once(world, rows):
    assert world.project.contacts.count() == rows
    created = Event.objects.filter(event="sendrealm.contact.created")
    assert created.count() == rows
    assert sorted(created.values_list("email", flat=True)) == sorted(
        f"p{n}@example.com" for n in range(rows)
    )


@pytest.mark.django_db
def test_a_chunk_whose_worker_died_is_applied_once_after_its_lease(imports, world, clock):
    import_id = _committing(imports)
    _, [chunk] = IMPORT_QUEUE.claim()

    def dies_before_commit():
        with transaction.atomic():
            import_chunk_apply(chunk=chunk)
            assert world.project.contacts.count() == 4
            raise Killed

    # The worker writes the chunk's rows, then dies before its transaction commits.
    with pytest.raises(Killed):
        dies_before_commit()
    assert world.project.contacts.count() == 0

    assert drain() == 0, "nobody takes a chunk over before its lease runs out"
    clock.advance(seconds=lease_seconds() + 1)
    assert drain() == 1

    _applied_once(world, 4)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == ("processed", 2)
    assert Import.objects.get(id=import_id).status == "committed"


@pytest.mark.django_db
def test_a_worker_that_lost_its_lease_applies_nothing(imports, world, clock):
    _committing(imports)
    slow_token, slow_items = IMPORT_QUEUE.claim()
    clock.advance(seconds=lease_seconds() + 1)
    assert drain() == 1

    outcome = IMPORT_QUEUE.run(token=slow_token, items=slow_items, work=_ApplyChunks())

    assert outcome.skipped == 1
    _applied_once(world, 4)


@pytest.mark.django_db
@override_settings(IMPORT_RETRY_MAX_ATTEMPTS=2, IMPORT_CHUNK_ROWS=2)
def test_a_chunk_that_keeps_failing_fails_the_import_and_can_be_requeued(
    imports, world, clock, monkeypatch
):
    import_id = _committing(imports)
    broken = ImportChunk.objects.get(import_record_id=import_id, first_row=3)
    apply = commit.import_chunk_apply

    def failing_on_rows_3_and_4(*, chunk):
        if chunk.first_row == 3:
            raise RuntimeError("the database went away")
        apply(chunk=chunk)

    # A fault injected into the worker: the chunk fails on every attempt.
    monkeypatch.setattr(commit, "import_chunk_apply", failing_on_rows_3_and_4)
    drain()
    clock.advance(seconds=3600)
    drain()
    monkeypatch.undo()

    record = Import.objects.get(id=import_id)
    assert record.status == "failed"
    assert record.last_error == "Rows 3 to 4: RuntimeError: the database went away"
    assert record.committed_rows == 2
    broken.refresh_from_db()
    assert (broken.status, broken.attempts) == ("dead_lettered", 2)

    assert commit.import_chunks_requeue(ids=[broken.pk]) == 1
    assert Import.objects.get(id=import_id).status == "committing"
    drain()
    record.refresh_from_db()
    assert (record.status, record.committed_rows, record.last_error) == ("committed", 4, None)
    _applied_once(world, 4)


# A real worker process, killed with SIGKILL inside the chunk's transaction.


def _wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_a_worker_process_killed_mid_chunk_leaves_nothing_and_the_next_applies_it_once(
    imports, world, tmp_path, clock
):
    clock.set(timezone.now())
    import_id = _committing(imports, rows=6)
    marker = tmp_path / "inside-chunk"
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.imports.worker_harness"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": _database_url(),
            "IMPORTS_TEST_BLOCK_MARKER": str(marker),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The worker claimed the chunk and wrote its rows inside the chunk's transaction.
        _wait_for(marker.exists)
        chunk = ImportChunk.objects.get(pk=int(marker.read_text()))
        assert chunk.status == "processing"
        assert world.project.contacts.count() == 0, "its writes are not committed"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

    # Nothing it wrote survived; the claim did, and its lease holds until it runs out.
    assert Contact.objects.filter(project=world.project).count() == 0
    assert Event.objects.count() == 0
    assert drain() == 0
    chunk.refresh_from_db()
    assert chunk.lease_expires_at is not None
    clock.set(chunk.lease_expires_at + dt.timedelta(seconds=1))
    assert drain() == 1

    _applied_once(world, 6)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == ("processed", 2)
    record = Import.objects.get(id=import_id)
    assert (record.status, record.committed_rows) == ("committed", 6)
