"""The harness's reading of process logs: every traceback is found, chained ones as one,
with its frames and error, in Django's log format and behind `make run`'s name prefixes."""

from tests.e2e.logs import traceback_excerpts

PLAIN = """\
2026-01-01 12:00:00,000 INFO celery.worker ready
2026-01-01 12:00:01,000 WARNING tenancy.usage Flushing usage counters failed; retrying
Traceback (most recent call last):
  File "tenancy/usage.py", line 203, in _rows_add
    cursor.execute(
sqlite3.ProgrammingError: Error binding parameter 1

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "tenancy/usage.py", line 263, in run
django.db.utils.ProgrammingError: Error binding parameter 1
2026-01-01 12:00:02,000 INFO celery.app.trace Task events.sweep[1] succeeded in 0.1s: 0
[2026-01-01 12:00:03 +0000] 127.0.0.1 - "GET /health HTTP/1.1" 200 1.0
2026-01-01 12:00:04,000 ERROR django.request Internal Server Error: /project/usage
Traceback (most recent call last):
  File "config/api/views.py", line 1, in get
ValueError: boom
"""


def test_each_traceback_is_one_excerpt_with_its_error_and_nothing_after():
    found = traceback_excerpts("worker.log", PLAIN)

    assert len(found) == 2
    assert found[0].startswith("--- worker.log ---\n2026-01-01 12:00:01,000 WARNING")
    assert found[0].endswith("django.db.utils.ProgrammingError: Error binding parameter 1")
    assert "sqlite3.ProgrammingError" in found[0]
    assert found[1].endswith("ValueError: boom")


def test_prefixed_lines_of_make_run_are_read_the_same():
    prefixed = "\n".join(f"worker | {line}" for line in PLAIN.splitlines())

    found = traceback_excerpts("run.log", prefixed)

    assert [excerpt.rsplit("\n", 1)[1] for excerpt in found] == [
        "worker | django.db.utils.ProgrammingError: Error binding parameter 1",
        "worker | ValueError: boom",
    ]


def test_a_clean_log_has_none():
    assert traceback_excerpts("web.log", PLAIN.split("Traceback")[0]) == []
