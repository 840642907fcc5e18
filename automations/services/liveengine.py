"""The engine of a live run: sends are stored for their workers, waits park the run's job
until their deadline or an event (engine.py holds the walk both engines share)."""

import uuid
from collections.abc import Mapping
from typing import Any

from automations.models import (
    AutomationRun,
    AutomationStatus,
    RunStatus,
    RunStep,
    RunWait,
    StepStatus,
    TerminalReason,
)
from automations.services.engine import OUTCOME_NO_DEVICES, Engine, StepFailed, Verdict
from automations.services.history import History
from automations.services.writes import Writes
from config.api.errors import ServiceError
from contacts.models import Contact
from contacts.services import contact_update
from events.selectors import EventWindow, WindowEvents, events_in_windows
from messaging.models import EmailStatus
from messaging.services.emails import EmailRequest
from pushproviders.services.sending import push_send
from tenancy.models import Meter
from tenancy.usage import usage_record


class LiveEngine(Engine):
    """A live run: sends are stored and delivered by their workers, waits park the run's
    job until their deadline (or an event).

    A wait is decided by when its event was accepted, not by when a worker got to it: an
    event of its name accepted while it was open (from its `created_at`, included, to its
    deadline, excluded) matches it. Past the deadline the engine reads that window
    (`awaited`, one statement per batch for all its such waits): while an event of the
    wait's project and name accepted in it is unprocessed (a backlog, or a worker that
    died holding it until its lease ran out), the run stays waiting and looks again every
    `AUTOMATIONS_WAIT_RECHECK_SECONDS`, the event matching it directly once processed
    (`triggers.waits_match`); an event of the contact processed before the wait was
    stored matches it now; else it times out."""

    def __init__(
        self,
        *,
        run: AutomationRun,
        history: History,
        writes: Writes | None = None,
        windows: dict[uuid.UUID, WindowEvents] | None = None,
    ) -> None:
        super().__init__(run=run, history=history, writes=writes)
        self.windows = windows if windows is not None else {}

    def awaited(self, wait: RunWait) -> WindowEvents | None:
        if wait.event is None:
            return None  # a plain `wait`: only its duration decides
        if wait.pk not in self.windows:
            self.windows.update(awaited_windows([wait]))
        return self.windows[wait.pk]

    def stopping(self) -> str | None:
        automation = self.automation
        if automation.status == AutomationStatus.ARCHIVED:
            return TerminalReason.ARCHIVED
        if automation.deleted_at is not None or self.run.cancellation_requested_at is not None:
            return TerminalReason.CANCELED
        return None

    def held(self) -> bool:
        return self.automation.status == AutomationStatus.PAUSED

    def _contact(self) -> Contact:
        if self.contact is None or self.contact.deleted_at is not None:
            raise StepFailed("The run's contact was deleted.")
        return self.contact

    def send_email(self, step: Mapping[str, Any], row: RunStep) -> bool:
        contact = self._contact()
        if not contact.email:
            raise StepFailed("The contact has no email address.")
        # Checked and rendered now (a step that cannot send fails here); stored, and
        # checked against the suppression list, with the rest of the writes.
        email = self.writes.emails.add(
            project=self.run.project,
            request=EmailRequest(
                to=[],
                contact_id=contact.id,
                template_id=uuid.UUID(step["template_id"]),
                from_email=step.get("from"),
                event=self.trigger_event(),
                variables=self.variables(),
            ),
            contact=contact,
        )
        self.writes.email(row, email)
        return bool(email.status == EmailStatus.QUEUED)

    def send_push(self, step: Mapping[str, Any], row: RunStep) -> bool:
        contact = self._contact()
        try:
            message, _ = push_send(
                project=self.run.project,
                # Every app of the project: the contact's active devices, whichever app.
                app_ref=None,
                contact_id=contact.id,
                template_id=uuid.UUID(step["template_id"]),
                event=self.trigger_event(),
                extra=self.variables(),
            )
        except ServiceError as error:
            if any(issue.code == "no_installations" for issue in error.issues):
                row.outcome = OUTCOME_NO_DEVICES
                return False
            raise
        row.push_id = message.id
        return True

    def defer(self, step: Mapping[str, Any], row: RunStep, resume_at: Any) -> Verdict:
        # Parked on a wait without an event until the window ends: the run's job is due
        # then, as for any wait (the due index of the run queue is the only timer).
        self._contact()
        wait = self.open_wait(step, row, timeout_at=resume_at)
        self.writes.wait(wait)
        self.history.add_wait(wait)
        row.status = StepStatus.DEFERRED
        self._record(row)
        self.run.status = RunStatus.WAITING
        return Verdict("park", resume_at)

    def update_contact(self, step: Mapping[str, Any], row: RunStep) -> None:
        contact = self._contact()
        self.contact = contact_update(
            project=self.run.project, contact_id=contact.id, fields=dict(step["fields"])
        )

    def enter_wait(self, step: Mapping[str, Any], row: RunStep) -> Verdict:
        now = self.now()
        wait = self.open_wait(step, row, timeout_at=now + self.duration_of(step))
        self.writes.wait(wait)
        # Metered after the step's transaction commits; test runs' simulated waits are not.
        usage_record(project=self.run.project, meter=Meter.WAITS_CREATED)
        self.history.add_wait(wait)
        row.status = StepStatus.WAITING
        self._record(row)
        self.run.status = RunStatus.WAITING
        return Verdict("park", wait.timeout_at)


def awaited_windows(waits: list[RunWait]) -> dict[uuid.UUID, WindowEvents]:
    """The events accepted while each `wait_for_event` wait was open, by wait."""
    waits = [wait for wait in waits if wait.event is not None]
    found = events_in_windows(
        windows=[
            EventWindow(
                project_id=wait.project_id,
                contact_id=wait.contact_id,
                event=str(wait.event),
                opened=wait.created_at,
                deadline=wait.timeout_at,
            )
            for wait in waits
        ]
    )
    return {wait.pk: held for wait, held in zip(waits, found, strict=True)}
