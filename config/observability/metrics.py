"""Prometheus metrics: request counts and latency by route and status (counted as they
happen), and figures read from the database when Prometheus scrapes (work-queue depth,
oldest due item, dead letters, and what families register: automation runs by status).

`GET /metrics` answers only `Authorization: Bearer <METRICS_TOKEN>`; with the setting
empty, or any other header, it is 404 like an unknown path. Several server or worker
processes on one machine share their counters when PROMETHEUS_MULTIPROC_DIR names an
empty directory they all write to (prometheus-client's multiprocess mode); without it a
scrape sees the counters of the process that answers it."""

import functools
import hmac
import logging
import os
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from config.api.exceptions import status_error_body
from config.registries.metrics import metrics_sources
from config.runtime import clock
from config.workqueue.models import DUE_STATUSES, WorkStatus
from config.workqueue.registry import work_queue_models

logger = logging.getLogger(__name__)

REQUESTS = Counter(
    "sendrealm_http_requests_total",
    "HTTP requests by route (the URL pattern's name), method and status.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "sendrealm_http_request_duration_seconds",
    "Time to answer HTTP requests, by route and method.",
    ["route", "method"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


# The counter and histogram children of each (route, method, status), found once: `labels`
# finds the same ones again on every request, under the metric's lock, at more cost than
# counting. Routes are the URLconf's names, so they are few.
@functools.cache
def _children(route: str, method: str, status: int) -> tuple[Any, Any]:
    return REQUESTS.labels(route, method, str(status)), LATENCY.labels(route, method)


def request_observe(*, route: str, method: str, status: int, seconds: float) -> None:
    requests, latency = _children(route, method, status)
    requests.inc()
    latency.observe(seconds)


class DatabaseCollector(Collector):
    """Figures read from the tables at scrape time (a few indexed queries per queue)."""

    def collect(self) -> Iterable[Metric]:
        depth = GaugeMetricFamily(
            "sendrealm_workqueue_depth",
            "Items waiting for an attempt (new, or failed and due again), by queue.",
            labels=["queue"],
        )
        oldest = GaugeMetricFamily(
            "sendrealm_workqueue_oldest_age_seconds",
            "How long the longest-waiting due item has been due, by queue (0: none).",
            labels=["queue"],
        )
        processing = GaugeMetricFamily(
            "sendrealm_workqueue_processing",
            "Items a worker holds right now, by queue.",
            labels=["queue"],
        )
        dead = GaugeMetricFamily(
            "sendrealm_workqueue_dead_letters",
            "Items whose retries ran out (the dead-letter queue), by queue.",
            labels=["queue"],
        )
        now = clock.now()
        for label, model in work_queue_models().items():
            rows = model._default_manager
            due = rows.filter(status__in=DUE_STATUSES, next_attempt_at__lte=now).aggregate(
                count=Count("pk"), first=Min("next_attempt_at")
            )
            depth.add_metric([label], due["count"])
            first = due["first"]
            oldest.add_metric([label], (now - first).total_seconds() if first else 0.0)
            processing.add_metric([label], rows.filter(status=WorkStatus.PROCESSING).count())
            dead.add_metric([label], rows.filter(status=WorkStatus.DEAD_LETTERED).count())
        yield from (depth, oldest, processing, dead)
        for source in metrics_sources():
            try:
                yield from source()
            except Exception:
                logger.warning("A metrics source failed: %r", source, exc_info=True)


_database = CollectorRegistry(auto_describe=False)
_database.register(DatabaseCollector())


def _counters() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def _authorized(request: HttpRequest) -> bool:
    token = str(getattr(settings, "METRICS_TOKEN", "") or "")
    if not token:
        return False
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


@csrf_exempt
def metrics_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The Prometheus text format, for the holder of METRICS_TOKEN only."""
    if not _authorized(request):
        # As any unknown path: the endpoint's existence is not revealed.
        return JsonResponse(status_error_body(404), status=404)
    if request.method not in ("GET", "HEAD"):
        return JsonResponse(status_error_body(405), status=405, headers={"Allow": "GET, HEAD"})
    body = generate_latest(_counters()) + generate_latest(_database)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
