"""The engine of a test run: the whole run inside the request on a virtual clock, sends
rendered and kept on their step (engine.py holds the walk both engines share)."""

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from automations.definition.conditions import payload_value
from automations.models import AutomationRun, RunStep, StepType, WaitStatus
from automations.services.engine import (
    OUTCOME_NO_DEVICES,
    OUTCOME_SUPPRESSED,
    OUTCOME_TIMEOUT,
    Engine,
    StepFailed,
)
from automations.services.history import OUTCOME_EVENT, History
from contacts.models import Contact
from contacts.normalization import merge_fields
from messaging.selectors.suppressions import suppressed_among
from messaging.selectors.templates import (
    template_get,
    template_version_current,
    template_version_published,
)
from messaging.services.policy import CapLedger
from messaging.services.rendering import render_email, render_push, template_context
from pushproviders.selectors import push_installation_list


@dataclass
class InjectedEvent:
    """An event a test run pretends arrives `at` (its start plus `after`)."""

    event: str
    payload: dict[str, Any]
    at: Any
    used: bool = False


class TestEngine(Engine):
    """A test run: the whole run inside the request on a virtual clock. Sends are rendered
    and kept on their step (nothing is stored to be delivered), `update_contact` changes a
    copy of the contact, and a wait resolves at once: matched by the first injected event
    of its name that comes before its deadline (and after it began), else timed out at its
    deadline; either way the clock moves there."""

    test = True

    def __init__(
        self,
        *,
        run: AutomationRun,
        history: History,
        contact: Contact | None,
        events: list[InjectedEvent],
        step_limit: int,
    ) -> None:
        super().__init__(run=run, history=history)
        # A contact not stored (a test by email alone) or a copy of a stored one, which
        # `update_contact` may change without touching the real one.
        self.contact = copy.copy(contact) if contact is not None else None
        self.events = sorted(events, key=lambda each: each.at)
        self.limit = step_limit
        # Sends of the test run counted against the caps (with the contact's real ones
        # in each cap's window before the virtual clock): never written.
        self.sends.ledger = CapLedger(locking=False)

    def now(self) -> Any:
        return self.run.virtual_now

    def step_limit(self) -> int:
        return self.limit

    def _template(self, step: Mapping[str, Any], channel: str) -> Any:
        template = template_get(project=self.run.project, template_id=step["template_id"])
        if template is None or template.channel != channel:
            raise StepFailed(f"The {channel} template {step['template_id']} does not exist.")
        # What a live run would send; before the template's first publish, its draft.
        version = template_version_published(template=template) or template_version_current(
            template=template
        )
        if version is None:
            raise StepFailed("The template has nothing to send.")
        return template, version

    def _variables(self) -> dict[str, Any]:
        return template_context(
            project=self.run.project,
            contact=self.contact,
            event=self.trigger_event(),
            extra=self.variables(),
        )

    def send_email(self, step: Mapping[str, Any], row: RunStep) -> bool:
        template, version = self._template(step, "email")
        if self.contact is None or not self.contact.email:
            raise StepFailed("The contact has no email address.")
        sender = step.get("from") or template.from_email or self.run.project.default_from
        if not sender:
            raise StepFailed(
                "No sender: the step has no `from`, the template none and the project no "
                "`default_from`."
            )
        rendered = render_email(version, self._variables())
        row.rendered = {
            "from": sender,
            "to": [self.contact.email],
            **rendered.content(),
            "template_version_id": str(version.id),
            "undefined_variables": rendered.undefined_variables,
        }
        if suppressed_among(project=self.run.project, emails=[self.contact.email]):
            row.outcome = OUTCOME_SUPPRESSED
            return False
        return True

    def send_push(self, step: Mapping[str, Any], row: RunStep) -> bool:
        _, version = self._template(step, "push")
        rendered = render_push(version, self._variables())
        devices = 0
        if self.contact is not None and self.contact.pk is not None:
            devices = (
                push_installation_list(project=self.run.project, contact_id=self.contact.pk)
                .filter(active=True)
                .count()
            )
        row.rendered = {
            **rendered.content(),
            "template_version_id": str(version.id),
            "installations": devices,
            "undefined_variables": rendered.undefined_variables,
        }
        if not devices:
            row.outcome = OUTCOME_NO_DEVICES
        return bool(devices)

    def defer(self, step: Mapping[str, Any], row: RunStep, resume_at: Any) -> None:
        # The clock moves to the end of the quiet hours and the message is sent there;
        # the step keeps `resume_at`, so the timeline shows the deferral.
        self.run.virtual_now = resume_at
        self.sends.deliver(step, row)

    def update_contact(self, step: Mapping[str, Any], row: RunStep) -> None:
        if self.contact is None:
            raise StepFailed("The run has no contact to update.")
        self.contact.fields = merge_fields(dict(self.contact.fields or {}), dict(step["fields"]))
        row.rendered = {"fields": step["fields"]}

    def _matching(self, step: Mapping[str, Any], start: Any, deadline: Any) -> InjectedEvent | None:
        run = self.run
        for injected in self.events:
            if injected.used or injected.event != step["event"]:
                continue
            if not start <= injected.at < deadline:
                continue
            correlated = run.correlation_value is not None and run.correlation_key
            if correlated and (
                payload_value(injected.payload, run.correlation_key or "") != run.correlation_value
            ):
                continue
            return injected
        return None

    def enter_wait(self, step: Mapping[str, Any], row: RunStep) -> str | None:
        start = self.now()
        deadline = start + self.duration_of(step)
        wait = self.open_wait(step, row, timeout_at=deadline)
        injected = (
            self._matching(step, start, deadline)
            if step["type"] == StepType.WAIT_FOR_EVENT
            else None
        )
        if injected is not None:
            injected.used = True
            wait.status, wait.resolved_at = WaitStatus.MATCHED, injected.at
            wait.matched_payload = injected.payload
            outcome = OUTCOME_EVENT
        else:
            wait.status, wait.resolved_at = WaitStatus.TIMED_OUT, deadline
            outcome = OUTCOME_TIMEOUT
        self.run.virtual_now = wait.resolved_at
        # Stored resolved: a test run's wait is never open, so no real event can match it.
        self.writes.wait(wait)
        self.history.add_wait(wait)
        row.completed_at = wait.resolved_at
        if step["type"] == StepType.WAIT_FOR_EVENT:
            row.outcome = outcome
        self._record(row)
        self.run.completed_step_key = row.step_key
        return self.following_wait(step, outcome)
