"""The console's periodic task: queue depth samples for the dashboard (beat, each minute)."""

from celery import shared_task

from config.console.samples import queue_samples_record


@shared_task(name="console.sample_queues", ignore_result=True)
def sample_queues() -> int:
    """Appends every queue's waiting and dead-lettered counts to its samples."""
    return queue_samples_record()
