"""Send steps under the project's delivery policy (docs/API.md, Delivery policy): a send in
the contact's quiet hours is deferred to their end, a send past the contact's frequency
cap of its channel is skipped (`outcome: capped`), and a send that went is counted
against the caps. Transactional steps pass both.

Each engine has its `PolicySends` (`engine.sends`), which uses the engine's clock,
contact and send methods (engine.py) and its `defer`: a live run parks on a wait without
an event until the window ends (the waits machinery, unchanged), a test run moves its
virtual clock there. At the window's end a paused automation holds the run at the send
(engine.py `_resume`), and sends once resumed.
"""

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from automations.models import RunStep, StepStatus, StepType
from messaging.models import Channel
from messaging.services.policy import CapLedger, DeliveryPolicy, policy_of

if TYPE_CHECKING:
    from automations.services.engine import Engine, Verdict

# A send skipped because the contact's frequency cap of its channel was reached; the run
# goes on. Conditions read a send that went as `sent` (its row's `outcome` stays null).
OUTCOME_CAPPED = "capped"
OUTCOME_SENT = "sent"

SEND_CHANNELS = {StepType.SEND_EMAIL: Channel.EMAIL, StepType.SEND_PUSH: Channel.PUSH}
# Steps a run is parked in: a wait, or a send deferred by quiet hours.
PARKED_STEP_STATUSES = (StepStatus.WAITING, StepStatus.DEFERRED)
# Counts the sends of a test run's contact that is not stored (an id no contact has).
NO_CONTACT = uuid.UUID(int=0)


class PolicySends:
    """The send steps of one engine's run, under its project's policy."""

    def __init__(self, engine: "Engine", *, ledger: CapLedger) -> None:
        self.engine = engine
        self.policy: DeliveryPolicy = policy_of(engine.run.project)
        # What counts the run's sends against the caps.
        self.ledger = ledger

    def _policy_applies(self, step: Mapping[str, Any]) -> bool:
        # Transactional steps bypass caps and quiet hours (never suppression). A live run
        # without a stored contact has no one to count against; a test run by email
        # alone counts its own sends.
        contact = self.engine.contact
        return (
            not step.get("transactional")
            and contact is not None
            and (contact.pk is not None or self.engine.test)
        )

    def send(self, step: Mapping[str, Any], row: RunStep) -> "Verdict | None":
        """A send step: deferred when the contact is in quiet hours, else delivered."""
        engine = self.engine
        quiet = not step.get("transactional") and self.policy.quiet is not None
        if quiet and engine.contact is not None:
            resume_at = self.policy.quiet_until(engine.now(), engine.contact.fields)
            if resume_at is not None:
                row.resume_at = resume_at
                return engine.defer(step, row, resume_at)
        self.deliver(step, row)
        return None

    def deliver(self, step: Mapping[str, Any], row: RunStep) -> None:
        """Sends the step's message unless the contact's cap of its channel is reached
        (then the step's outcome is `capped`); a message that went counts against it."""
        channel = SEND_CHANNELS[step["type"]]
        counted = self._policy_applies(step) and bool(self.policy.caps_of(channel))
        engine = self.engine
        contact = engine.contact
        contact_id: uuid.UUID = contact.pk if contact is not None and contact.pk else NO_CONTACT
        now = engine.now()
        if counted and not self.ledger.room(
            policy=self.policy, contact_id=contact_id, channel=channel, at=now
        ):
            row.outcome = OUTCOME_CAPPED
            return
        if step["type"] == StepType.SEND_EMAIL:
            went = engine.send_email(step, row)
        else:
            went = engine.send_push(step, row)
        if counted and went:
            self.ledger.count(
                policy=self.policy,
                project_id=engine.run.project_id,
                contact_id=contact_id,
                channel=channel,
                at=now,
            )

    def resume(self, step: Mapping[str, Any], row: RunStep) -> "Verdict | str | None":
        """A deferred send whose window ended (its wait resolved): delivered now (the caps
        are read at the send), and the run goes on."""
        engine = self.engine
        now = engine.now()
        engine._started()
        failed = engine.attempt(row, lambda: self.deliver(step, row))
        if failed is not None:
            return failed
        row.status = StepStatus.COMPLETED
        row.completed_at = now
        engine.writes.step_changed(row)
        engine.run.completed_step_key = row.step_key
        following: str | None = step.get("next")
        return following
