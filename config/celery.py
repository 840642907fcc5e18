"""The Celery app, its queues and the beat schedule: every periodic task is listed here."""

import gc
from contextvars import Token
from typing import Any

from celery import Celery, Task
from celery.signals import (
    before_task_publish,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_ready,
)
from django.conf import settings
from kombu.entity import Queue

from config.db.partitions import partitions_maintain
from config.observability.requestcontext import current_request_id, request_id_reset, request_id_set

app = Celery("sendrealm")
app.config_from_object("django.conf:settings", namespace="CELERY")


class Queues:
    """Queue names; a task names its queue through the routes below."""

    DEFAULT = "default"
    EVENTS = "events"
    MESSAGING = "messaging"
    PUSH = "push"
    AUTOMATIONS = "automations"
    IMPORTS = "imports"
    WEBHOOKS = "webhooks"


app.conf.task_default_queue = Queues.DEFAULT
# Each queue bound under its own routing key: left unset, both would be bound to the key
# "default" and a message published by routing key would land in both.
app.conf.task_queues = [
    Queue(Queues.DEFAULT, routing_key=Queues.DEFAULT),
    Queue(Queues.EVENTS, routing_key=Queues.EVENTS),
    Queue(Queues.MESSAGING, routing_key=Queues.MESSAGING),
    Queue(Queues.PUSH, routing_key=Queues.PUSH),
    Queue(Queues.AUTOMATIONS, routing_key=Queues.AUTOMATIONS),
    # Commits apply thousands of rows per task: their own queue keeps events and sends
    # from waiting behind them when workers are split by queue.
    Queue(Queues.IMPORTS, routing_key=Queues.IMPORTS),
    # Deliveries wait on customers' servers (up to a timeout each): apart from the sends.
    Queue(Queues.WEBHOOKS, routing_key=Queues.WEBHOOKS),
]
app.conf.task_routes = {
    "events.*": {"queue": Queues.EVENTS},
    "messaging.*": {"queue": Queues.MESSAGING},
    "pushproviders.*": {"queue": Queues.PUSH},
    "automations.*": {"queue": Queues.AUTOMATIONS},
    "imports.*": {"queue": Queues.IMPORTS},
    "webhooks.*": {"queue": Queues.WEBHOOKS},
}


class QueueTimeLimits:
    """A task annotation: every task, ours and Celery's own, gets the soft and hard time
    limits of the queue its route names (`TASK_TIME_LIMITS`, per queue in the settings).
    A queue without limits there is refused when its first task binds. Celery puts the
    publishing process's limits in each task message, and a worker keeps to those: web
    processes and workers run with the same settings."""

    def annotate(self, task: type[Task]) -> dict[str, float]:
        queue = app.amqp.router.route({}, task.name)["queue"].name
        soft, hard = settings.TASK_TIME_LIMITS[queue]
        if not 0 < soft < hard:
            raise ValueError(f"The {queue} queue's soft time limit must be below its hard one.")
        return {"soft_time_limit": soft, "time_limit": hard}

    def annotate_any(self) -> None:
        return None


app.conf.task_annotations = [QueueTimeLimits()]

# Each sweep is idempotent and bounded; `expires` is shorter than the interval so a
# backlog of sweeps never piles up behind a slow worker.
app.conf.beat_schedule = {
    # The events table is the queue; this sweep is the safety net behind the debounced
    # wake-up (broker outage, dead worker, retries coming due, uncounted catalog rows).
    "events.sweep": {
        "task": "events.sweep",
        "schedule": 5.0,
        "options": {"expires": 4},
    },
    "events.purge_expired": {
        "task": "events.purge_expired",
        "schedule": 600.0,
        "options": {"expires": 540},
    },
    # The email deliveries table is the queue; the same safety net for sends.
    "messaging.sweep_emails": {
        "task": "messaging.sweep_emails",
        "schedule": 5.0,
        "options": {"expires": 4},
    },
    # Receipts of ESP webhook events, kept only while an ESP may resend one.
    "messaging.purge_esp_receipts": {
        "task": "messaging.purge_esp_receipts",
        "schedule": 3600.0,
        "options": {"expires": 3000},
    },
    # Campaigns: scheduled sends start when due; the fan-out table is a queue too, with
    # the same safety net, which also finishes campaigns whose last worker stopped.
    "messaging.start_scheduled_campaigns": {
        "task": "messaging.start_scheduled_campaigns",
        "schedule": 5.0,
        "options": {"expires": 4},
    },
    "messaging.sweep_campaigns": {
        "task": "messaging.sweep_campaigns",
        "schedule": 10.0,
        "options": {"expires": 9},
    },
    # The push deliveries table is the queue; the same safety net for push sends.
    "pushproviders.sweep_push": {
        "task": "pushproviders.sweep_push",
        "schedule": 5.0,
        "options": {"expires": 4},
    },
    # The runs' jobs table is the queue, and its due index holds the wait deadlines: this
    # sweep times waits out (within its interval: timeouts are approximate) and is the
    # safety net of the trigger's wake-up.
    "automations.sweep_runs": {
        "task": "automations.sweep_runs",
        "schedule": 5.0,
        "options": {"expires": 4},
    },
    "automations.purge_expired": {
        "task": "automations.purge_expired",
        "schedule": 600.0,
        "options": {"expires": 540},
    },
    # The import chunks table is the queue of commits; the same safety net for them.
    "imports.sweep": {
        "task": "imports.sweep",
        "schedule": 10.0,
        "options": {"expires": 9},
    },
    # The webhook deliveries table is the queue; the same safety net for deliveries
    # (retries coming due, dead workers' leases).
    "webhooks.sweep": {
        "task": "webhooks.sweep",
        "schedule": 10.0,
        "options": {"expires": 9},
    },
    "webhooks.purge_expired": {
        "task": "webhooks.purge_expired",
        "schedule": 600.0,
        "options": {"expires": 540},
    },
    # Live usage counters (Redis) into the per-day rows; idempotent across crashes.
    "tenancy.fold_usage": {
        "task": "tenancy.fold_usage",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
    # History tables partitioned by time: partitions made ahead, expired ones dropped.
    "partitions.maintain": {
        "task": "partitions.maintain",
        "schedule": 3600.0,
        "options": {"expires": 3000},
    },
    "preparedactions.expire": {
        "task": "preparedactions.expire",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
    # The dashboard's queue depths over time: a sample of each queue every minute.
    "console.sample_queues": {
        "task": "console.sample_queues",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
}

app.autodiscover_tasks()
# The console's own task: config.console is not an installed app (the admin's config in
# it carries django.contrib.admin's name), so its tasks module is named here.
app.autodiscover_tasks(["config.console"])


@app.task(name="partitions.maintain", ignore_result=True)
def maintain_partitions() -> dict[str, dict[str, list[str]]]:
    """Makes the declared tables' partitions ahead and drops those no retention keeps."""
    return {
        table: {"made": done.made, "dropped": done.dropped}
        for table, done in partitions_maintain().items()
    }


# The request id travels with every task published while a request (or a task) is
# served, and is bound while the task runs: its log lines carry the id of the request
# that caused it.
REQUEST_ID_HEADER = "request_id"
_bound: dict[str, Token[str | None]] = {}


@before_task_publish.connect
def _carry_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    request_id = current_request_id()
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


@task_prerun.connect
def _bind_request_id(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    # A worker makes message headers attributes of the request; `apply` keeps them apart.
    request_id = getattr(request, REQUEST_ID_HEADER, None) or (
        getattr(request, "headers", None) or {}
    ).get(REQUEST_ID_HEADER)
    if task_id is not None:
        _bound[task_id] = request_id_set(request_id if isinstance(request_id, str) else None)


@task_postrun.connect
def _unbind_request_id(task_id: str | None = None, **kwargs: Any) -> None:
    token = _bound.pop(task_id, None) if task_id is not None else None
    if token is not None:
        request_id_reset(token)


@worker_process_init.connect
@worker_ready.connect
def _freeze_loaded_objects(**kwargs: Any) -> None:
    """A worker process keeps Django, its apps and their modules for its whole life;
    moved out of the cyclic collector's view, they are no longer scanned by each full
    collection (about 200 ms over the loaded application, once every few batches).
    `worker_process_init` covers the prefork pool's children, `worker_ready` the process
    that runs tasks itself (solo and threads pools)."""
    gc.collect()
    gc.freeze()
