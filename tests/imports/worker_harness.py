"""A worker process that applies due import chunks, for the test that kills one mid-chunk.

Started as a subprocess with the test settings and the test database. With
IMPORTS_TEST_BLOCK_MARKER set, it blocks after a chunk's rows are written but before its
transaction commits, having written the chunk's id to that file, so the test knows the
worker is inside the chunk's transaction and can kill it there.
"""

import os
import pathlib
import time
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from imports.services import commit  # noqa: E402

MARKER = os.environ.get("IMPORTS_TEST_BLOCK_MARKER")
_record_progress = commit._progress_recorded


def _blocking(**kwargs: Any) -> None:
    _record_progress(**kwargs)
    pathlib.Path(str(MARKER)).write_text(str(kwargs["chunk"].pk))
    time.sleep(600)


if __name__ == "__main__":
    if MARKER:
        commit._progress_recorded = _blocking
    commit.imports_commit_due(budget_seconds=600)
