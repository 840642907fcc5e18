"""The events table as a work queue: the kit's claim, retries, dead-letter and wake-up,
with the event pipeline's tunables (events/conf.py)."""

from config.workqueue.queue import WorkQueue
from events import conf
from events.models import Event

EVENT_QUEUE: WorkQueue[Event] = WorkQueue(
    model=Event,
    task="events.process_batch",
    wake_key="events:wake",
    retry_policy=lambda event: conf.retry_policy_for(event.project),
    batch_size=conf.claim_batch_size,
    lease_seconds=conf.lease_seconds,
    wake_debounce_seconds=conf.wake_debounce_seconds,
    settle_seconds=conf.wake_settle_seconds,
    # A batch is worked in the order its events occurred (then by receipt).
    order_by=("next_attempt_at", "occurred_at", "created_at"),
    # A batch's events share a project or a few: one query, not a join per row.
    prefetch_related=("project",),
)
