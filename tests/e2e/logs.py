"""Reading the logs of the end-to-end topologies' processes: what came after a moment, and
the tracebacks in them (any is a failure of the run, tests/e2e/conftest.py)."""

import re
from pathlib import Path

TRACEBACK = "Traceback (most recent call last)"


class LogMark:
    """Where each log ended at a moment, to read only what came after."""

    def __init__(self, logs: list[Path]) -> None:
        self.offsets = {log: log.stat().st_size if log.exists() else 0 for log in logs}

    def since(self, log: Path) -> str:
        with log.open("rb") as handle:
            handle.seek(self.offsets.get(log, 0))
            return handle.read().decode(errors="replace")


# A line that starts a new log record (Django's format, granian's access log), after
# which a traceback's frames and error are over.
RECORD_START = re.compile(r"(^|\| )(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\[\d{4}-\d\d-\d\d )")


def traceback_excerpts(name: str, text: str, *, most_lines: int = 60) -> list[str]:
    """Each traceback in `text` (chained ones together) up to the next log record."""
    lines = text.splitlines()
    found = []
    number = 0
    while number < len(lines):
        if TRACEBACK not in lines[number]:
            number += 1
            continue
        end = number + 1
        while end < min(len(lines), number + most_lines) and not RECORD_START.search(lines[end]):
            end += 1
        excerpt = "\n".join(lines[max(0, number - 1) : end])
        found.append(f"--- {name} ---\n{excerpt}")
        number = end
    return found


def report(problems: list[str], *, most: int = 3) -> str:
    more = len(problems) - most
    return "\n".join(problems[:most]) + (f"\n... and {more} more" if more > 0 else "")
