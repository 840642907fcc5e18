"""Factories for automations, their versions and runs (with steps and waits)."""

import datetime as dt

import factory
from factory.django import DjangoModelFactory

from automations.models import (
    Automation,
    AutomationRun,
    AutomationStatus,
    AutomationVersion,
    AutomationVersionState,
    ExecutionMode,
    RunStatus,
    RunStep,
    RunWait,
    StepStatus,
    StepType,
    WaitStatus,
)
from config.runtime import clock
from tests.factories import ProjectFactory


def simple_definition(event: str = "order.completed") -> dict:
    """A valid definition without templates: wait a day, then exit."""
    return {
        "trigger": {"event": event},
        "start": "pause",
        "steps": [
            {"key": "pause", "type": "wait", "duration": "P1D", "next": "done"},
            {"key": "done", "type": "exit", "next": None},
        ],
    }


class AutomationFactory(DjangoModelFactory):
    """An automation in `draft` without versions; `published=True` gives it a published
    version 1 and makes it active."""

    class Meta:
        model = Automation
        skip_postgeneration_save = True

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"Automation {n}")

    class Params:
        published = factory.Trait(status=AutomationStatus.ACTIVE, trigger_event="order.completed")

    @factory.post_generation
    def with_version(self, create: bool, extracted: object, **kwargs: object) -> None:
        if not create:
            return
        if self.status == AutomationStatus.ACTIVE:
            version = AutomationVersionFactory(
                automation=self,
                state=AutomationVersionState.PUBLISHED,
                published_at=clock.now(),
            )
            self.current_published_version = version
        else:
            self.current_draft_version = AutomationVersionFactory(automation=self)
        self.save()


class AutomationVersionFactory(DjangoModelFactory):
    class Meta:
        model = AutomationVersion

    automation = factory.SubFactory(AutomationFactory)
    version_number = factory.LazyAttribute(lambda v: v.automation.versions.count() + 1)
    state = AutomationVersionState.DRAFT
    definition = factory.LazyFunction(simple_definition)


class AutomationRunFactory(DjangoModelFactory):
    """A live run of the automation's published version (else its draft), `pending`."""

    class Meta:
        model = AutomationRun

    automation = factory.SubFactory(AutomationFactory, published=True)
    project = factory.SelfAttribute("automation.project")
    version = factory.LazyAttribute(
        lambda r: r.automation.current_published_version or r.automation.current_draft_version
    )
    trigger_event_name = "order.completed"
    trigger_payload = factory.LazyFunction(lambda: {"order_id": "1001"})
    execution_mode = ExecutionMode.LIVE
    status = RunStatus.PENDING

    class Params:
        running = factory.Trait(
            status=RunStatus.RUNNING, started_at=factory.LazyFunction(clock.now)
        )
        waiting = factory.Trait(
            status=RunStatus.WAITING,
            started_at=factory.LazyFunction(clock.now),
            current_step_key="pause",
        )
        completed = factory.Trait(
            status=RunStatus.COMPLETED,
            started_at=factory.LazyFunction(clock.now),
            completed_at=factory.LazyFunction(clock.now),
            terminal_reason="completed",
            completed_step_key="done",
        )
        test = factory.Trait(
            execution_mode=ExecutionMode.TEST, virtual_now=factory.LazyFunction(clock.now)
        )


class RunStepFactory(DjangoModelFactory):
    class Meta:
        model = RunStep

    run = factory.SubFactory(AutomationRunFactory)
    run_created_at = factory.SelfAttribute("run.created_at")
    step_key = "pause"
    type = StepType.WAIT
    status = StepStatus.WAITING
    started_at = factory.LazyFunction(clock.now)


class RunWaitFactory(DjangoModelFactory):
    class Meta:
        model = RunWait

    run = factory.SubFactory(AutomationRunFactory, waiting=True)
    project = factory.SelfAttribute("run.project")
    contact = factory.SelfAttribute("run.contact")
    step_key = "pause"
    event = None
    timeout_at = factory.LazyFunction(lambda: clock.now() + dt.timedelta(days=1))
    status = WaitStatus.WAITING
