"""The collector pause around a batch of work: nested and concurrent blocks leave the
collector as it was before the first began."""

import gc
import threading
from collections.abc import Iterator

import pytest

from config.db.collector import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_paused_inside_and_resumed_after_nesting() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resumed_after_an_error() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_left_disabled_when_it_was() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_threads_resume_it_once_both_end() -> None:
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with collector_paused():
            inside.set()
            release.wait(5)

    other = threading.Thread(target=hold)
    other.start()
    assert inside.wait(5)
    with collector_paused():
        pass
    # The other thread's block still runs: the collector stays off.
    assert not gc.isenabled()
    release.set()
    other.join(5)
    assert gc.isenabled()
