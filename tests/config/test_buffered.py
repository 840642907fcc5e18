"""The per-process buffer of records written in batches (config/runtime/buffered.py): its
thread writes within the interval, a failed write keeps its records for the next, a fork
leaves the parent's records to the parent, and an exiting process (a multiprocessing worker
too) writes what it holds."""

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from config.runtime.buffered import BufferedWriter


class Sink:
    """Where the writes of a test's buffer go, failing the first `failures` of them."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.batches: list[list[int]] = []
        self.written = threading.Event()

    def __call__(self, items: list[int]) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the store is away")
        self.batches.append(items)
        self.written.set()

    @property
    def items(self) -> list[int]:
        return [item for batch in self.batches for item in batch]


def test_the_thread_writes_what_gathered_within_the_interval():
    sink = Sink()
    buffer = BufferedWriter(name="test", write=sink, interval=lambda: 0.01)

    for item in range(5):
        buffer.add(item)

    # Nothing here writes: the thread does, in one batch or more.
    deadline = time.monotonic() + 10
    while len(sink.items) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sink.items == [0, 1, 2, 3, 4]
    assert buffer.pending() == 0


def test_a_full_batch_wakes_the_thread_before_its_interval_ends():
    sink = Sink()
    buffer = BufferedWriter(name="test", write=sink, interval=lambda: 3600, batch=3)

    buffer.add(1)
    buffer.add(2)
    assert not sink.written.wait(0.2)
    buffer.add(3)

    assert sink.written.wait(5)
    assert sink.batches == [[1, 2, 3]]


def test_an_interval_of_zero_writes_only_when_asked():
    sink = Sink()
    buffer = BufferedWriter(name="test", write=sink, interval=lambda: 0)

    buffer.add(1)

    assert not sink.written.wait(0.2)
    buffer.wake.set()
    assert sink.written.wait(5)
    assert sink.batches == [[1]]


def test_a_failed_write_keeps_its_records_ahead_of_newer_ones_and_compacts_them():
    sink = Sink(failures=2)
    buffer = BufferedWriter(
        name="test", write=sink, interval=lambda: 3600, compact=lambda items: items[-3:]
    )
    buffer.add(1)
    buffer.add(2)

    with pytest.raises(ConnectionError):
        buffer.flush()
    buffer.add(3)
    buffer.add(4)
    with pytest.raises(ConnectionError):
        buffer.flush()
    assert buffer.pending() == 3
    buffer.flush()

    assert sink.batches == [[2, 3, 4]]
    assert buffer.pending() == 0


def test_no_record_is_lost_when_threads_add_while_the_thread_writes():
    sink = Sink()
    buffer = BufferedWriter(name="test", write=sink, interval=lambda: 0.001)

    def add(start: int) -> None:
        for item in range(start, start + 2000):
            buffer.add(item)

    threads = [threading.Thread(target=add, args=(n * 2000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    buffer.flush()

    assert sorted(sink.items) == list(range(8000))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_starts_empty_and_leaves_the_parents_records_to_it():
    sink = Sink()
    buffer = BufferedWriter(name="test", write=sink, interval=lambda: 3600)
    buffer.add(1)

    child = os.fork()
    if child == 0:
        buffer.add(2)
        buffer.flush()
        os._exit(0 if sink.batches == [[2]] else 1)
    _, status = os.waitpid(child, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    buffer.flush()
    assert sink.batches == [[1]]


def _record_in_a_worker(out: str) -> None:
    def write(items: list[int]) -> None:
        with open(out, "a") as file:
            file.write(",".join(map(str, items)))

    buffer = BufferedWriter(name="test", write=write, interval=lambda: 3600)
    buffer.add(3)
    buffer.add(4)


def test_a_multiprocessing_worker_writes_what_it_holds_on_its_way_out(tmp_path: Path):
    # Granian's and Celery's workers leave through `os._exit`, which runs no `atexit`.
    out = tmp_path / "written"
    worker = multiprocessing.get_context("fork").Process(
        target=_record_in_a_worker, args=(str(out),)
    )

    worker.start()
    worker.join(timeout=60)

    assert worker.exitcode == 0
    assert out.read_text() == "3,4"


def test_an_exiting_process_writes_what_it_holds(tmp_path: Path):
    out = tmp_path / "written"
    script = textwrap.dedent(
        f"""
        from config.runtime.buffered import BufferedWriter

        def write(items):
            with open({str(out)!r}, "a") as file:
                file.write(",".join(map(str, items)))

        buffer = BufferedWriter(name="test", write=write, interval=lambda: 3600)
        buffer.add(1)
        buffer.add(2)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[2])

    assert out.read_text() == "1,2"
