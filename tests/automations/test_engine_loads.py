"""A batch reads its runs, contacts, timelines and waits in binary and makes instances
without the ORM (automations/services/loads.py): they must be the ORM's, field for field."""

import uuid

import pytest
from django.db import transaction

from automations.models import (
    Automation,
    AutomationRun,
    AutomationVersion,
    RunStep,
    RunWait,
    StepStatus,
    WaitStatus,
)
from automations.services.advance import _by_id, _load_postgresql
from automations.services.loads import Fresh
from tenancy.models import Project
from tests.automations.factories import AutomationRunFactory, RunStepFactory, RunWaitFactory
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


def values(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.fields}


def orm_load(ids: list[uuid.UUID]) -> tuple[dict, dict, dict]:
    """What the binary load stands for, through the ORM: the runs locked, their contacts,
    and the steps and waits of the started ones, in order."""
    runs = {
        run.id: run
        for run in AutomationRun.objects.select_for_update(of=("self",))
        .select_related("contact")
        .filter(id__in=ids)
        .order_by("id")
    }
    started = [run.id for run in runs.values() if run.started_at is not None]
    steps: dict[uuid.UUID, list[RunStep]] = {}
    waits: dict[uuid.UUID, list[RunWait]] = {}
    for step in RunStep.objects.filter(run_id__in=started).order_by("sequence", "id"):
        steps.setdefault(step.run_id, []).append(step)
    for wait in RunWait.objects.filter(run_id__in=started).order_by("created_at", "id"):
        waits.setdefault(wait.run_id, []).append(wait)
    return runs, steps, waits


def test_a_batch_loads_the_same_rows_the_orm_does():
    run = AutomationRunFactory(waiting=True, trigger_payload={"order": {"id": 7, "tags": ["a"]}})
    contact = ContactFactory(project=run.project, fields={"plan": "pro", "n": 1.5})
    AutomationRun.objects.filter(id=run.id).update(contact=contact, correlation_key="order.id")
    RunStepFactory(run=run, sequence=1, status=StepStatus.COMPLETED, outcome="then")
    RunStepFactory(run=run, step_key="send", sequence=2, rendered={"subject": "Hi"})
    RunWaitFactory(run=run, contact=contact, matched_payload={"x": [1, None]})
    RunWaitFactory(run=run, visit=2, status=WaitStatus.TIMED_OUT)
    pending = AutomationRunFactory(project=run.project)  # not started: no history read
    ids = sorted([run.id, pending.id, uuid.uuid4()])

    with transaction.atomic():
        fast_runs, fast_steps, fast_waits = _load_postgresql(ids)
        orm_runs, orm_steps, orm_waits = orm_load(ids)

    assert list(fast_runs) == list(orm_runs) == sorted([run.id, pending.id])
    for run_id, loaded in fast_runs.items():
        assert values(loaded) == values(orm_runs[run_id])
        assert loaded._state.adding is False
        assert loaded._state.db == orm_runs[run_id]._state.db
    assert values(fast_runs[run.id].contact) == values(orm_runs[run.id].contact)
    assert fast_runs[pending.id].contact is None
    assert list(fast_steps) == list(orm_steps) == [run.id]
    assert [values(s) for s in fast_steps[run.id]] == [values(s) for s in orm_steps[run.id]]
    assert [values(w) for w in fast_waits[run.id]] == [values(w) for w in orm_waits[run.id]]
    assert isinstance(fast_steps[run.id][0], RunStep)
    assert isinstance(fast_waits[run.id][0], RunWait)


def test_a_run_without_a_contact_loads_without_one():
    run = AutomationRunFactory(waiting=True)
    with transaction.atomic():
        runs, _, _ = _load_postgresql([run.id])
    assert runs[run.id].contact is None


def test_a_fresh_row_is_what_the_model_makes_with_the_same_values():
    run = AutomationRunFactory(waiting=True)
    given = {
        "run": run,
        "step_key": "send",
        "visit": 2,
        "type": "send_email",
        "status": StepStatus.COMPLETED,
        "started_at": run.started_at,
        "sequence": 3,
    }
    fresh, made = Fresh(RunStep).make(**given), RunStep(**given)
    assert fresh.id != made.id  # each gets its own default
    fresh.id = made.id
    fresh.created_at = made.created_at
    assert values(fresh) == values(made)
    assert fresh._state.adding is True
    assert fresh.run is run
    wait = Fresh(RunWait).make(project_id=run.project_id, run=run, contact=None, step_key="p")
    assert (wait.project_id, wait.run_id, wait.contact_id, wait.visit) == (
        run.project_id,
        run.id,
        None,
        1,
    )


def test_a_fresh_row_refuses_a_field_the_model_does_not_have():
    with pytest.raises(TypeError, match="stepkey"):
        Fresh(RunStep).make(stepkey="send")


def test_a_batch_reads_automations_versions_and_projects_as_in_bulk_does():
    run = AutomationRunFactory()
    for model, key in (
        (Automation, run.automation_id),
        (AutomationVersion, run.version_id),
        (Project, run.project_id),
    ):
        fast, orm = _by_id(model, {key, uuid.uuid4()}), model.objects.in_bulk([key])
        assert list(fast) == list(orm) == [key]
        assert values(fast[key]) == values(orm[key])
