"""Every work queue of the service, as the metrics and the staff dashboard see them.

A `WorkQueue` registers itself when it is built (at the import of its family's module);
`work_queue_models` adds any `WorkItem` model without one, so nothing on the kit is
left out of the depth and dead-letter figures."""

from typing import TYPE_CHECKING, Any

from django.apps import apps
from prometheus_client import Counter

from config.workqueue.models import WorkItem

if TYPE_CHECKING:
    from config.workqueue.queue import WorkQueue

_queues: dict[str, "WorkQueue[Any]"] = {}

WORK_OUTCOMES = Counter(
    "sendrealm_work_items_total",
    "Work items (events, email and push deliveries, ...) worked, by queue and outcome: "
    "done, retried (failed, will retry) or dead_lettered.",
    ["queue", "outcome"],
)


def register_queue(queue: "WorkQueue[Any]") -> None:
    _queues[queue.label] = queue


def registered_queues() -> dict[str, "WorkQueue[Any]"]:
    return dict(_queues)


def work_queue_models() -> dict[str, type[WorkItem]]:
    """Every concrete WorkItem model by label (proxies, such as the dead-letter views of
    the admin, are the same table and are left out)."""
    found: dict[str, type[WorkItem]] = {label: queue.model for label, queue in _queues.items()}
    for model in apps.get_models():
        if issubclass(model, WorkItem) and not model._meta.proxy:
            found.setdefault(model._meta.label, model)
    return dict(sorted(found.items()))


def work_outcomes_count(queue: str, *, done: int, retried: int, dead_lettered: int) -> None:
    """Counts what one run of a claimed batch came to (after its transaction)."""
    for outcome, count in (("done", done), ("retried", retried), ("dead_lettered", dead_lettered)):
        if count:
            WORK_OUTCOMES.labels(queue, outcome).inc(count)
