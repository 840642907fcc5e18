"""What a Celery worker process does when it starts."""

import gc

from celery.signals import worker_process_init, worker_ready

from config.celery import app


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
