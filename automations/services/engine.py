"""The run engine: takes a run through the steps of its version until it waits, ends, fails,
is canceled or is held by a paused automation.

One advance happens in one transaction with the run's row locked (the worker's batch,
automations/services/advance.py; or a test run's request, testruns.py): the timeline
rows it writes, the emails and push messages it stores, the waits it opens and the run's
new state commit together or not at all. Each step taken is a `RunStep` row unique on
(run, step_key, visit), where `visit` counts from the rows the run already has, so two
advances of one state can never both commit a step (and so a send): the second meets the
key. Domain errors of a step (a template gone, a contact without an email) fail the run
with the error on the step; anything else propagates, rolls the advance back and leaves
the retry to the work-queue kit.

Boundaries: before each step the engine looks at the run and its automation. A
cancellation request, a deleted or archived automation end the run `canceled` (with
`terminal_reason` `canceled` or `archived`); a paused automation holds the run (`pending`,
its job idle) at the step it would take until the automation is resumed.
"""

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from automations.conf import wait_recheck_seconds
from automations.definition.conditions import condition_holds
from automations.definition.durations import parse_duration
from automations.models import (
    FINISHED_RUN_STATUSES,
    AutomationRun,
    RunStatus,
    RunStep,
    RunWait,
    StepStatus,
    StepType,
    TerminalReason,
    WaitStatus,
)
from automations.services.facts import contact_facts
from automations.services.goals import goal_of
from automations.services.history import OUTCOME_EVENT, History, steps_of
from automations.services.loads import Fresh
from automations.services.policysends import (
    PARKED_STEP_STATUSES,
    SEND_CHANNELS,
    PolicySends,
)
from automations.services.splits import split_choice
from automations.services.triggers import wait_correlates
from automations.services.writes import Writes
from config.api.errors import ServiceError
from config.runtime import clock
from contacts.models import Contact
from events.selectors import WindowEvents
from messaging.services.email_batch import Likely
from messaging.services.policy import CapLedger
from messaging.services.rendering import SampleEvent

# `RunStep.outcome` of sends that had nobody to send to: every recipient suppressed, or no
# active device. The step is completed: the run goes on.
OUTCOME_SUPPRESSED = "suppressed"
OUTCOME_NO_DEVICES = "no_devices"
OUTCOME_TIMEOUT = "timeout"

# Enough for any path through a definition (at most 200 steps, and every loop passes a
# wait, where an advance stops): more means something is wrong, and the run fails.
MAX_STEPS_PER_ADVANCE = 400

RUN_FIELDS = [
    "status",
    "current_step_key",
    "started_at",
    "completed_at",
    "terminal_reason",
    "completed_step_key",
    "last_error",
    "cancellation_requested_at",
    "canceled_at",
    "virtual_now",
    "updated_at",
]


NEW_STEP = Fresh(RunStep)
NEW_WAIT = Fresh(RunWait)


def new_writes(
    *, likely: Callable[[], Likely] | None = None, caps: CapLedger | None = None
) -> Writes:
    """Writes for advances of this engine (a suppressed send marks its step so)."""
    return Writes(suppressed_outcome=OUTCOME_SUPPRESSED, likely=likely, caps=caps)


@dataclass(frozen=True)
class Verdict:
    """What the run's job does after an advance: nothing more (`done`), come back at
    `until` (`park`: the run waits), or nothing until the automation is resumed (`hold`)."""

    kind: str
    until: Any = None


DONE = Verdict("done")
HOLD = Verdict("hold")


class StepFailed(Exception):
    """A step could not be taken for a reason a retry cannot change; the run fails."""


def _error_text(error: ServiceError) -> str:
    parts = [error.message]
    parts += [f"{issue.path}: {issue.message}" for issue in error.issues]
    if error.details:
        parts.append(error.details)
    return " ".join(parts)[:2000]


def _permanent(error: ServiceError) -> bool:
    return error.status < 500


class Engine:
    """Advances one run. Subclasses say what time it is, how sends and contact updates
    happen, and how a wait is entered: `LiveEngine` stores and parks, `TestEngine` renders
    and moves its virtual clock."""

    test = False

    def __init__(
        self, *, run: AutomationRun, history: History, writes: Writes | None = None
    ) -> None:
        self.run = run
        self.automation = run.automation
        self.history = history
        self.steps = steps_of(run.version)
        self.contact: Contact | None = run.contact
        self.taken = 0
        # Shared by the advances of a batch (written once for all of them), else this
        # engine's own, written by `save`.
        self.shared = writes is not None
        self.writes = writes if writes is not None else new_writes()
        self.sends = PolicySends(self, ledger=self.writes.caps)

    # --- what differs -----------------------------------------------------------------

    def now(self) -> Any:
        return clock.now()

    # The sends answer whether a message went (not to a suppressed address, to a device).
    def send_email(self, step: Mapping[str, Any], row: RunStep) -> bool:
        raise NotImplementedError

    def send_push(self, step: Mapping[str, Any], row: RunStep) -> bool:
        raise NotImplementedError

    def defer(self, step: Mapping[str, Any], row: RunStep, resume_at: Any) -> Verdict | None:
        """A send in quiet hours until `resume_at`: park (live) or move the clock (test)."""
        raise NotImplementedError

    def update_contact(self, step: Mapping[str, Any], row: RunStep) -> None:
        raise NotImplementedError

    def enter_wait(self, step: Mapping[str, Any], row: RunStep) -> Verdict | str | None:
        raise NotImplementedError

    def stopping(self) -> str | None:
        """The terminal reason the run must stop with at this boundary, or None."""
        return None

    def held(self) -> bool:
        return False

    def goal_reached(self) -> str | None:
        """`converted` when the run converted and its version says `exit_on_goal`
        (automations/services/goals.py): it ends at this boundary, waiting or not."""
        if self.run.converted_at is None:
            return None
        goal = goal_of(self.run.version)
        return TerminalReason.CONVERTED if goal is not None and goal.exit_on_goal else None

    def awaited(self, wait: RunWait) -> WindowEvents | None:
        """The events of the wait's name accepted while it was open (a `wait_for_event`
        wait whose deadline has passed), or None when only the deadline decides."""
        return None

    # --- the walk ---------------------------------------------------------------------

    def advance(self) -> Verdict:
        run = self.run
        if run.status in FINISHED_RUN_STATUSES:
            return DONE
        key = run.current_step_key
        if key is not None and self._in_wait(key):
            reason = self.goal_reached() or self.stopping()
            if reason is not None:
                return self._stop(reason)
            resumed = self._resume(key)
            if isinstance(resumed, Verdict):
                return resumed
            key = resumed
        return self.walk(key)

    def walk(self, key: str | None) -> Verdict:
        while True:
            if key is None:
                return self._end(TerminalReason.COMPLETED)
            reason = self.goal_reached() or self.stopping()
            if reason is not None:
                return self._stop(reason)
            if self.held():
                return self._hold(key)
            self.taken += 1
            if self.taken > self.step_limit():
                return self._fail(
                    None, f"The run took more than {self.step_limit()} steps without waiting."
                )
            outcome = self._take(self.steps[key])
            if isinstance(outcome, Verdict):
                return outcome
            key = outcome

    def step_limit(self) -> int:
        return MAX_STEPS_PER_ADVANCE

    def variables(self) -> dict[str, Any]:
        return {"steps": self.history.variables()}

    def facts(self) -> dict[str, Any]:
        return {
            "payload": self.run.trigger_payload,
            "contact": contact_facts(self.contact),
            "steps": self.history.variables(),
        }

    def trigger_event(self) -> SampleEvent:
        return SampleEvent(event=self.run.trigger_event_name, payload=self.run.trigger_payload)

    def _in_wait(self, key: str) -> bool:
        step = self.history.steps.get(key)
        return step is not None and step.status in PARKED_STEP_STATUSES

    def _started(self) -> None:
        run = self.run
        run.status = RunStatus.RUNNING
        if run.started_at is None:
            run.started_at = self.now()

    def _take(self, step: Mapping[str, Any]) -> Verdict | str | None:
        key, kind = step["key"], step["type"]
        self._started()
        self.run.current_step_key = key
        row = NEW_STEP.make(
            run=self.run,
            run_created_at=self.run.created_at,
            step_key=key,
            visit=self.history.visits.get(key, 0) + 1,
            type=kind,
            status=StepStatus.COMPLETED,
            started_at=self.now(),
            sequence=self.history.taken + 1,
        )
        following: str | None = step.get("next")
        try:
            if kind in SEND_CHANNELS:
                deferred = self.sends.send(step, row)
                if deferred is not None:
                    return deferred
            elif kind == StepType.UPDATE_CONTACT:
                self.update_contact(step, row)
            elif kind in (StepType.WAIT, StepType.WAIT_FOR_EVENT):
                return self.enter_wait(step, row)
            elif kind == StepType.BRANCH:
                holds = condition_holds(step["condition"], self.facts())
                row.outcome = "then" if holds else "else"
                following = step["then"] if holds else step["else"]
            elif kind == StepType.SPLIT:
                row.outcome, following = split_choice(
                    step, automation_id=self.run.automation_id, contact=self.contact
                )
        except StepFailed as failure:
            return self._fail(row, str(failure))
        except ServiceError as error:
            if not _permanent(error):
                raise
            return self._fail(row, _error_text(error))
        row.completed_at = self.now()
        self._record(row)
        self.run.completed_step_key = key
        if kind == StepType.EXIT:
            return self._end(TerminalReason.EXITED)
        return following

    def _record(self, row: RunStep) -> None:
        self.writes.step(row)
        self.history.add_step(row)

    def attempt(self, row: RunStep, action: Callable[[], None]) -> Verdict | None:
        """Runs a step's action; a domain error fails the run with the error on `row`."""
        try:
            action()
        except StepFailed as failure:
            return self._fail(row, str(failure))
        except ServiceError as error:
            if not _permanent(error):
                raise
            return self._fail(row, _error_text(error))
        return None

    def open_wait(self, step: Mapping[str, Any], row: RunStep, *, timeout_at: Any) -> RunWait:
        """The wait row of a wait step (not saved)."""
        run = self.run
        waits_for_event = step["type"] == StepType.WAIT_FOR_EVENT
        correlated = waits_for_event and run.correlation_value is not None
        return NEW_WAIT.make(
            project_id=run.project_id,
            run=run,
            contact=self.contact if self.contact is not None and self.contact.pk else None,
            step_key=row.step_key,
            visit=row.visit,
            event=step["event"] if waits_for_event else None,
            correlation_key=run.correlation_key if correlated else None,
            correlation_value=run.correlation_value if correlated else None,
            timeout_at=timeout_at,
            status=WaitStatus.WAITING,
            created_at=self.now(),
        )

    @staticmethod
    def duration_of(step: Mapping[str, Any]) -> Any:
        text = step["duration"] if step["type"] == StepType.WAIT else step["timeout"]
        duration = parse_duration(text)
        if duration is None:  # the definition checks refuse these
            raise StepFailed(f"`{text}` is not a duration the engine can wait.")
        return duration

    def following_wait(self, step: Mapping[str, Any], outcome: str | None) -> str | None:
        if step["type"] == StepType.WAIT or outcome == OUTCOME_EVENT:
            following: str | None = step.get("next")
            return following
        on_timeout: str | None = step.get("on_timeout")
        return on_timeout

    def _resume(self, key: str) -> Verdict | str | None:
        """The run is in a wait: go on if it resolved (or time it out if its deadline has
        passed), else park until the deadline."""
        step, row = self.steps[key], self.history.steps[key]
        wait = self.history.wait_of(row)
        now = self.now()
        if wait is None:
            return self._fail(row, "The run's wait is missing.")
        if wait.status == WaitStatus.WAITING:
            if wait.timeout_at > now:
                self.run.status = RunStatus.WAITING
                return Verdict("park", wait.timeout_at)
            found = self.awaited(wait)
            if found is not None and found.pending:
                # An event accepted before the deadline may still match: it decides once
                # processed (matching the wait makes the job due), else the next look.
                self.run.status = RunStatus.WAITING
                return Verdict("park", now + dt.timedelta(seconds=wait_recheck_seconds()))
            missed = _first_correlated(wait, found.processed) if found is not None else None
            if missed is not None:
                # Accepted while the wait was open, but processed before the wait was
                # stored: it matches now, as it would have then.
                wait.status, wait.resolved_at = WaitStatus.MATCHED, now
                wait.matched_event_id, wait.matched_payload = missed
            else:
                wait.status, wait.resolved_at = WaitStatus.TIMED_OUT, now
            self.writes.wait_changed(wait)
        elif wait.status == WaitStatus.CANCELED:
            return self._stop(TerminalReason.CANCELED)
        if row.status == StepStatus.DEFERRED:
            return self._hold(key) if self.held() else self.sends.resume(step, row)
        outcome = OUTCOME_EVENT if wait.status == WaitStatus.MATCHED else OUTCOME_TIMEOUT
        row.status = StepStatus.COMPLETED
        row.completed_at = wait.resolved_at or now
        if step["type"] == StepType.WAIT_FOR_EVENT:
            row.outcome = outcome
        self.writes.step_changed(row)
        self._started()
        self.run.completed_step_key = key
        return self.following_wait(step, outcome)

    # --- endings ------------------------------------------------------------------------

    def _end(self, reason: str) -> Verdict:
        run = self.run
        run.status = RunStatus.COMPLETED
        run.terminal_reason = reason
        run.completed_at = self.now()
        if run.started_at is None:
            run.started_at = run.completed_at
        run.current_step_key = None
        return DONE

    def _fail(self, row: RunStep | None, message: str) -> Verdict:
        run = self.run
        now = self.now()
        if row is not None:
            row.status = StepStatus.FAILED
            row.error = message
            row.completed_at = now
            if row._state.adding:
                self._record(row)
            else:
                self.writes.step_changed(row)
        run.status = RunStatus.FAILED
        run.terminal_reason = TerminalReason.FAILED
        run.last_error = message
        run.completed_at = now
        return DONE

    def _stop(self, reason: str) -> Verdict:
        """Ends the run `canceled` (`completed` when it converted: `exit_on_goal`) with
        its open wait and waiting step. Written at once,
        not gathered: a stop is rare, and it comes before anything else this advance
        would write for the run's rows (a stopping run resumes no wait)."""
        run = self.run
        now = self.now()
        RunWait.objects.filter(run=run, status=WaitStatus.WAITING).update(
            status=WaitStatus.CANCELED, resolved_at=now
        )
        RunStep.objects.filter(
            run=run,
            run_created_at=run.created_at,
            status__in=[StepStatus.RUNNING, *PARKED_STEP_STATUSES],
        ).update(status=StepStatus.CANCELED, completed_at=now)
        run.terminal_reason = reason
        run.completed_at = now
        if reason == TerminalReason.CONVERTED:
            run.status = RunStatus.COMPLETED
            run.current_step_key = None
            return DONE
        run.status = RunStatus.CANCELED
        run.cancellation_requested_at = run.cancellation_requested_at or now
        run.canceled_at = now
        return DONE

    def _hold(self, key: str) -> Verdict:
        self.run.status = RunStatus.PENDING
        self.run.current_step_key = key
        return HOLD

    def save(self) -> None:
        """The run's new state joins the writes; the engine's own writes are written."""
        self.run.updated_at = clock.now()
        self.writes.run(self.run, RUN_FIELDS)
        if not self.shared:
            self.writes.flush()


def _first_correlated(
    wait: RunWait, events: list[tuple[uuid.UUID, Any]]
) -> tuple[uuid.UUID, Any] | None:
    for event_id, payload in events:
        if wait_correlates(wait, payload):
            return event_id, payload
    return None
