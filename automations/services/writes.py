"""What advances write, gathered and written together.

An advance does not write its rows as it goes: its timeline rows, waits, the changes to
rows it already had, the run itself and the emails its send steps make are gathered
here and written by `flush`, a few statements whatever the number of runs: one insert of
the emails and one of their deliveries (the suppression list read once, at the first send),
one insert of the waits and one of the timeline rows (with one upsert of the steps' entry
counts), one update each of the waits, the timeline rows and the runs changed. A worker
flushes once for the batch it advances together, and per run when it works the batch run
by run (automations/services/advance.py); a test run flushes at its end.

The guarantees do not move: the rows of one advance still commit in one transaction with
its emails, and a send step still inserts its `RunStep` (unique on run, step key and
visit) in that same transaction, so an advance that meets the key of a step another
delivery committed rolls back, emails included.
"""

from collections import Counter
from collections.abc import Callable
from typing import Any

from automations.models import AutomationRun, ExecutionMode, RunStep, RunWait
from automations.services.report_counts import steps_counted
from automations.services.step_entries import step_entries_count
from config.db.bulk import rows_insert, rows_update
from messaging.models import Email, EmailStatus
from messaging.services.email_batch import EmailBatch, Likely
from messaging.services.policy import CapLedger

# What changes on a step or a wait the run already had (resumed, failed).
STEP_CHANGES = ["status", "completed_at", "outcome", "error", "email", "push_id"]
WAIT_CHANGES = ["status", "resolved_at", "matched_event_id", "matched_payload"]


class Writes:
    """The rows of one or more advances, not yet written."""

    def __init__(
        self,
        *,
        suppressed_outcome: str,
        likely: Callable[[], Likely] | None = None,
        caps: CapLedger | None = None,
    ) -> None:
        self.suppressed_outcome = suppressed_outcome
        # The sends counted against frequency caps, written with the emails; it also
        # knows the contacts whose cap lock the transaction holds.
        self.caps = caps if caps is not None else CapLedger()
        # The addresses the advances may send to (`EmailBatch`): read from the suppression
        # list at the first send, in one query.
        self.likely = likely
        self.run_fields: list[str] = []
        self._clear()

    def _clear(self) -> None:
        self.emails = EmailBatch(likely=self.likely)
        self.steps: list[RunStep] = []
        self.waits: list[RunWait] = []
        self.changed_steps: dict[Any, RunStep] = {}
        self.changed_waits: dict[Any, RunWait] = {}
        self.runs: dict[Any, AutomationRun] = {}
        self.sent: list[tuple[RunStep, Email]] = []

    def step(self, row: RunStep) -> None:
        """A new timeline row."""
        self.steps.append(row)

    def step_changed(self, row: RunStep) -> None:
        """A stored timeline row changed (`STEP_CHANGES`)."""
        self.changed_steps[row.pk] = row

    def wait(self, wait: RunWait) -> None:
        """A new wait."""
        self.waits.append(wait)

    def wait_changed(self, wait: RunWait) -> None:
        """A stored wait changed (`WAIT_CHANGES`)."""
        self.changed_waits[wait.pk] = wait

    def run(self, run: AutomationRun, fields: list[str]) -> None:
        """The run's new state (`fields`, the same for every run)."""
        self.runs[run.pk] = run
        self.run_fields = fields

    def email(self, row: RunStep, email: Email) -> None:
        """The email of a send step (added to `emails`); a suppressed one marks the step."""
        row.email = email
        self.sent.append((row, email))

    def discard(self) -> None:
        """Forgets everything gathered (the advances were undone), giving back the email
        quota their sends had counted."""
        self.emails.release()
        self.caps.discard()
        self._clear()

    def flush(self) -> None:
        """Writes everything gathered, in the caller's transaction, and starts afresh."""
        self.emails.store()
        self.caps.flush()
        for row, email in self.sent:
            if email.status == EmailStatus.SUPPRESSED:
                row.outcome = self.suppressed_outcome
        rows_insert(RunWait, self.waits)
        rows_update(RunWait, list(self.changed_waits.values()), WAIT_CHANGES)
        rows_insert(RunStep, self.steps)
        # Live runs entering a step for the first time, for the console's funnel.
        step_entries_count(
            Counter(
                (row.run.version_id, row.step_key)
                for row in self.steps
                if row.visit == 1 and row.run.execution_mode == ExecutionMode.LIVE
            )
        )
        steps_counted(self.steps, list(self.changed_steps.values()), self.runs)
        # By the run's start too: each step is looked for in its run's partition only.
        rows_update(
            RunStep, list(self.changed_steps.values()), STEP_CHANGES, match=["run_created_at"]
        )
        if self.runs:
            rows_update(AutomationRun, list(self.runs.values()), self.run_fields)
        self._clear()
