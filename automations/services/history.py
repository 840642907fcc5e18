"""What a run already has, as the engine reads it: its timeline and waits (`History`),
and the steps of its version by key (`steps_of`, kept per process for versions that no
longer change)."""

import uuid
from typing import Any

from automations.models import (
    AutomationVersion,
    AutomationVersionState,
    RunStep,
    RunWait,
    StepStatus,
    StepType,
)
from automations.services.policysends import OUTCOME_SENT, SEND_CHANNELS

# The outcome of a `wait_for_event` step its event came to.
OUTCOME_EVENT = "event"

_frozen_steps: dict[uuid.UUID, dict[str, dict[str, Any]]] = {}
MAX_CACHED_VERSIONS = 1024


def steps_of(version: AutomationVersion) -> dict[str, dict[str, Any]]:
    """The version's steps by key. Published and superseded versions never change, so
    their index is kept per process."""
    if version.state == AutomationVersionState.DRAFT:
        return {step["key"]: step for step in version.definition["steps"]}
    steps = _frozen_steps.get(version.id)
    if steps is None:
        if len(_frozen_steps) >= MAX_CACHED_VERSIONS:
            _frozen_steps.clear()
        steps = {step["key"]: step for step in version.definition["steps"]}
        _frozen_steps[version.id] = steps
    return steps


class History:
    """The rows a run already has: its timeline and its waits, oldest first."""

    def __init__(self, steps: list[RunStep], waits: list[RunWait]) -> None:
        self.steps: dict[str, RunStep] = {}
        self.visits: dict[str, int] = {}
        self.taken = 0
        self.waits: dict[tuple[str, int], RunWait] = {}
        for step in steps:
            self.add_step(step)
        for wait in waits:
            self.add_wait(wait)

    def add_step(self, step: RunStep) -> None:
        self.taken = max(self.taken, step.sequence)
        self.steps[step.step_key] = step
        self.visits[step.step_key] = max(self.visits.get(step.step_key, 0), step.visit)

    def add_wait(self, wait: RunWait) -> None:
        self.waits[(wait.step_key, wait.visit)] = wait

    def wait_of(self, step: RunStep) -> RunWait | None:
        return self.waits.get((step.step_key, step.visit))

    def variables(self) -> dict[str, Any]:
        """`steps`, as conditions and templates see it: each `wait_for_event` step that
        resolved (its latest visit) with its `outcome` and, when an event came, `event`."""
        found: dict[str, Any] = {}
        for key, step in self.steps.items():
            if step.type in SEND_CHANNELS and step.status == StepStatus.COMPLETED:
                found[key] = {"outcome": step.outcome or OUTCOME_SENT}
            if step.type != StepType.WAIT_FOR_EVENT or step.outcome is None:
                continue
            entry: dict[str, Any] = {"outcome": step.outcome}
            wait = self.wait_of(step)
            if step.outcome == OUTCOME_EVENT and wait is not None:
                entry["event"] = {"event": wait.event, "payload": wait.matched_payload or {}}
            found[key] = entry
        return found
