"""The runs' jobs as a work queue: the kit's claim, retries, dead-letter and wake-up, with
the engine's tunables (automations/conf.py)."""

from automations import conf
from automations.models import RunJob
from config.workqueue.queue import WorkQueue

RUN_QUEUE: WorkQueue[RunJob] = WorkQueue(
    model=RunJob,
    task="automations.advance_runs",
    wake_key="automations:runs:wake",
    retry_policy=conf.retry_policy_for,
    batch_size=conf.claim_batch_size,
    lease_seconds=conf.lease_seconds,
    wake_debounce_seconds=conf.wake_debounce_seconds,
    settle_seconds=conf.wake_settle_seconds,
    order_by=("next_attempt_at",),
    # An advance only writes the database (its emails are rows, delivered by their own
    # queue) and locks its runs first, so a job taken over mid-batch cannot be advanced
    # twice: the done mark checks the claim instead of a re-lock of the jobs.
    relock=False,
)
