"""The engine's staff actions (cancel runs, requeue dead-lettered jobs) and retention of
finished runs and resolved waits."""

import datetime as dt

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from automations.models import AutomationRun, RunJob, RunStep, RunWait
from automations.services.retention import runs_purge_expired
from config.workqueue.models import WorkStatus
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    RunStepFactory,
    RunWaitFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_staff_cancel_ends_a_waiting_run_and_flags_a_running_one(staff, world):
    automation = AutomationFactory(project=world.project, published=True)
    waiting = AutomationRunFactory(automation=automation, waiting=True)
    RunWaitFactory(run=waiting)
    running = AutomationRunFactory(automation=automation, running=True)
    done = AutomationRunFactory(automation=automation, completed=True)
    response = staff.post(
        "/admin/automations/automationrun/",
        {
            "action": "cancel_runs",
            ACTION_CHECKBOX_NAME: [str(waiting.id), str(running.id), str(done.id)],
        },
    )
    assert response.status_code == 302
    waiting.refresh_from_db()
    running.refresh_from_db()
    done.refresh_from_db()
    assert (waiting.status, waiting.terminal_reason) == ("canceled", "canceled")
    assert waiting.waits.get().status == "canceled"
    assert running.status == "running"
    assert running.cancellation_requested_at is not None
    assert done.status == "completed"


def test_staff_requeue_gives_a_dead_lettered_job_fresh_attempts(staff, world):
    run = AutomationRunFactory(automation__project=world.project, running=True)
    job = RunJob.objects.create(run=run, status=WorkStatus.DEAD_LETTERED, attempts=8)
    response = staff.post(
        "/admin/automations/runjob/",
        {"action": "requeue", ACTION_CHECKBOX_NAME: [str(job.pk)]},
    )
    assert response.status_code == 302
    job.refresh_from_db()
    assert (job.status, job.attempts) == (WorkStatus.ACCEPTED, 0)


def test_the_run_page_shows_the_rendered_step_of_a_test_run(staff, world):
    run = AutomationRunFactory(automation__project=world.project, test=True, completed=True)
    RunStepFactory(run=run, status="completed", rendered={"subject": "Hello there"})
    page = staff.get(f"/admin/automations/automationrun/{run.id}/change/")
    assert page.status_code == 200
    assert b"Hello there" in page.content


def test_retention_purges_finished_runs_and_resolved_waits_but_never_waiting_ones(world, clock):
    world.project.run_retention_days = 30
    world.project.wait_retention_days = 10
    world.project.save()
    automation = AutomationFactory(project=world.project, published=True)
    old = clock.current - dt.timedelta(days=31)
    finished = AutomationRunFactory(automation=automation, completed=True)
    AutomationRun.objects.filter(id=finished.id).update(completed_at=old)
    RunStepFactory(run=finished, status="completed")
    RunJob.objects.create(run=finished, status=WorkStatus.PROCESSED)
    recent = AutomationRunFactory(automation=automation, completed=True)
    test_run = AutomationRunFactory(automation=automation, test=True, completed=True)
    AutomationRun.objects.filter(id=test_run.id).update(created_at=old)
    waiting = AutomationRunFactory(automation=automation, waiting=True)
    AutomationRun.objects.filter(id=waiting.id).update(created_at=old, started_at=old)
    open_wait = RunWaitFactory(run=waiting, timeout_at=old)
    long_run = AutomationRunFactory(automation=automation, waiting=True)
    resolved = RunWaitFactory(
        run=long_run, step_key="a", status="timed_out", resolved_at=old + dt.timedelta(days=10)
    )
    fresh = RunWaitFactory(run=long_run, step_key="b", resolved_at=None)

    assert runs_purge_expired() == 3

    assert set(AutomationRun.objects.values_list("id", flat=True)) == {
        recent.id,
        waiting.id,
        long_run.id,
    }
    assert not RunStep.objects.filter(run_id=finished.id).exists()
    assert not RunJob.objects.exists()
    assert set(RunWait.objects.values_list("id", flat=True)) == {open_wait.id, fresh.id}
    assert resolved.id not in set(RunWait.objects.values_list("id", flat=True))
    assert runs_purge_expired() == 0
