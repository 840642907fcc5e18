"""The Celery app, its queues and the beat schedule: every periodic task is listed here."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("sendrealm")
app.config_from_object("django.conf:settings", namespace="CELERY")


class Queues:
    """Queue names; a task names its queue through the routes below."""

    DEFAULT = "default"
    EVENTS = "events"
    MESSAGING = "messaging"
    PUSH = "push"
    AUTOMATIONS = "automations"


app.conf.task_default_queue = Queues.DEFAULT
# Each queue bound under its own routing key: left unset, both would be bound to the key
# "default" and a message published by routing key would land in both.
app.conf.task_queues = [
    Queue(Queues.DEFAULT, routing_key=Queues.DEFAULT),
    Queue(Queues.EVENTS, routing_key=Queues.EVENTS),
    Queue(Queues.MESSAGING, routing_key=Queues.MESSAGING),
    Queue(Queues.PUSH, routing_key=Queues.PUSH),
    Queue(Queues.AUTOMATIONS, routing_key=Queues.AUTOMATIONS),
]
app.conf.task_routes = {
    "events.*": {"queue": Queues.EVENTS},
    "messaging.*": {"queue": Queues.MESSAGING},
    "pushproviders.*": {"queue": Queues.PUSH},
    "automations.*": {"queue": Queues.AUTOMATIONS},
}

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
    "preparedactions.expire": {
        "task": "preparedactions.expire",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
}

app.autodiscover_tasks()
