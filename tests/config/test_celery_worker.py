"""What a Celery worker process does when it starts, and the time limits its tasks run
under."""

import gc

import pytest
from celery.signals import worker_process_init, worker_ready

from config.celery import QueueTimeLimits, app


def test_a_starting_worker_process_moves_its_loaded_objects_out_of_the_collectors_view():
    gc.unfreeze()
    try:
        # As the prefork pool's child sends it after the fork.
        worker_process_init.send(sender=None)

        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_worker_that_runs_tasks_itself_freezes_when_ready():
    gc.unfreeze()
    try:
        worker_ready.send(sender=app)

        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def _queue_of(name: str) -> str:
    return str(app.amqp.router.route({}, name)["queue"].name)


def test_every_task_has_the_soft_and_hard_time_limits_of_its_queue(settings):
    app.loader.import_default_modules()
    ours = [name for name in app.tasks if not name.startswith("celery.")]
    scheduled = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert scheduled <= set(ours)
    assert {queue.name for queue in app.conf.task_queues} == set(settings.TASK_TIME_LIMITS)

    for name, task in app.tasks.items():
        soft, hard = settings.TASK_TIME_LIMITS[_queue_of(name)]
        assert (task.soft_time_limit, task.time_limit) == (soft, hard), name
        assert 0 < soft < hard, name
    assert (app.tasks["pushproviders.deliver_push"].soft_time_limit) == 180.0
    assert (app.tasks["tenancy.fold_usage"].time_limit) == 90.0


def test_a_tasks_time_limits_follow_its_queues_settings(settings):
    settings.TASK_TIME_LIMITS = {**settings.TASK_TIME_LIMITS, "push": (5.0, 7.0)}
    task = type(app.tasks["pushproviders.sweep_push"])

    assert QueueTimeLimits().annotate(task) == {"soft_time_limit": 5.0, "time_limit": 7.0}
    assert QueueTimeLimits().annotate(type(app.tasks["events.sweep"]))["time_limit"] == 120.0


def test_a_queue_whose_soft_limit_is_not_below_its_hard_one_is_refused(settings):
    settings.TASK_TIME_LIMITS = {**settings.TASK_TIME_LIMITS, "imports": (60.0, 60.0)}

    with pytest.raises(ValueError, match="imports queue's soft time limit"):
        QueueTimeLimits().annotate(type(app.tasks["imports.sweep"]))
