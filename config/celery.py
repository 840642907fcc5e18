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
    IMPORTS = "imports"


app.conf.task_default_queue = Queues.DEFAULT
# Each queue bound under its own routing key: left unset, both would be bound to the key
# "default" and a message published by routing key would land in both.
app.conf.task_queues = [
    Queue(Queues.DEFAULT, routing_key=Queues.DEFAULT),
    Queue(Queues.EVENTS, routing_key=Queues.EVENTS),
    Queue(Queues.MESSAGING, routing_key=Queues.MESSAGING),
    # Commits apply thousands of rows per task: their own queue keeps events and sends
    # from waiting behind them when workers are split by queue.
    Queue(Queues.IMPORTS, routing_key=Queues.IMPORTS),
]
app.conf.task_routes = {
    "events.*": {"queue": Queues.EVENTS},
    "messaging.*": {"queue": Queues.MESSAGING},
    "imports.*": {"queue": Queues.IMPORTS},
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
    # The import chunks table is the queue of commits; the same safety net for them.
    "imports.sweep": {
        "task": "imports.sweep",
        "schedule": 10.0,
        "options": {"expires": 9},
    },
    "preparedactions.expire": {
        "task": "preparedactions.expire",
        "schedule": 60.0,
        "options": {"expires": 50},
    },
}

app.autodiscover_tasks()
