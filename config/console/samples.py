"""Queue depths over time, for the dashboard: beat records every work queue's waiting and
dead-lettered counts once a minute (`queue_samples_record`, task `console.sample_queues`)
and the dashboard draws the last 24 hours from them.

The samples live in the cache's Redis, one capped list per queue (the newest
SAMPLES_KEPT, so pruning is part of each write): they are a picture for staff, cheap to
lose (a flushed cache shows a gap), and config, which knows no app, has no table of its
own. Reading them costs one round trip, never a count of the queues' tables."""

import datetime as dt
import logging
from dataclasses import dataclass

import redis

from config.runtime import clock
from config.runtime.redisclient import redis_client
from config.workqueue.models import DUE_STATUSES, WorkStatus
from config.workqueue.registry import work_queue_models

logger = logging.getLogger(__name__)

KEY = "console:queue-samples:{label}"
SAMPLES_KEPT = 24 * 60
WINDOW = dt.timedelta(hours=24)
BUCKET = dt.timedelta(minutes=30)


@dataclass(frozen=True)
class QueueHistory:
    """One queue's waiting and dead-lettered counts over the window, the largest of each
    bucket (0 where no sample was taken)."""

    label: str
    name: str
    waiting: list[int]
    dead_letters: list[int]


def queue_samples_record() -> int:
    """Counts each queue's waiting (due now) and dead-lettered items and appends them to
    its samples; returns how many queues were sampled. Two indexed counts per queue."""
    now = clock.now()
    pipe = redis_client().pipeline(transaction=False)
    sampled = 0
    for label, model in work_queue_models().items():
        rows = model._default_manager
        waiting = rows.filter(status__in=DUE_STATUSES, next_attempt_at__lte=now).count()
        dead = rows.filter(status=WorkStatus.DEAD_LETTERED).count()
        key = KEY.format(label=label)
        pipe.rpush(key, f"{int(now.timestamp())}:{waiting}:{dead}")
        pipe.ltrim(key, -SAMPLES_KEPT, -1)
        sampled += 1
    pipe.execute()
    return sampled


def bucket_labels(now: dt.datetime) -> list[str]:
    """The x labels of the window's buckets, oldest first (UTC hours and minutes)."""
    start = now - WINDOW
    count = int(WINDOW / BUCKET)
    return [(start + BUCKET * (index + 1)).strftime("%H:%M") for index in range(count)]


def queue_histories() -> list[QueueHistory] | None:
    """Every queue's waiting counts over the last 24 hours, in buckets; None when the
    samples cannot be read (the dashboard says so instead of failing)."""
    now = clock.now()
    start = now - WINDOW
    count = int(WINDOW / BUCKET)
    models = work_queue_models()
    pipe = redis_client().pipeline(transaction=False)
    for label in models:
        pipe.lrange(KEY.format(label=label), 0, -1)
    try:
        answers = pipe.execute()
    except redis.RedisError:
        logger.warning("Queue samples could not be read", exc_info=True)
        return None
    histories = []
    for (label, model), samples in zip(models.items(), answers, strict=True):
        waiting, dead_letters = [0] * count, [0] * count
        for sample in samples:
            stamp, depth, dead = sample.decode().split(":")
            at = dt.datetime.fromtimestamp(int(stamp), tz=dt.UTC)
            if at <= start or at > now:
                continue
            index = min(int((at - start) / BUCKET), count - 1)
            waiting[index] = max(waiting[index], int(depth))
            dead_letters[index] = max(dead_letters[index], int(dead))
        histories.append(
            QueueHistory(
                label=label,
                name=str(model._meta.verbose_name_plural),
                waiting=waiting,
                dead_letters=dead_letters,
            )
        )
    return histories
