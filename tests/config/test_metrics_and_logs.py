"""GET /metrics (token, text format, request and work-queue figures), the request id
(accepted or made, returned, in JSON log lines and carried into the tasks a request
publishes)."""

import datetime as dt
import io
import json
import logging
from typing import Any

import pytest
from celery import shared_task
from celery.signals import before_task_publish
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

import config.urls
from config.observability.diagnostics import DatabaseErrorRedactor
from config.observability.logs import JsonFormatter
from config.workqueue import wake
from events.models import Event, EventStatus
from events.services.processing import events_process_due
from events.wake import events_wake_rearm
from tenancy.api.base import ProjectView
from tests.automations.factories import AutomationRunFactory

pytestmark = pytest.mark.django_db

TOKEN = "metrics-secret-token"


class LogsSomething(ProjectView):
    def get(self, request: Request) -> Response:
        logging.getLogger("tests.requests").warning("Serving a test request", extra={"n": 7})
        return Response({})


urlpatterns = [
    path("tests/logs-something", LogsSomething.as_view(), name="logs-something"),
    *config.urls.urlpatterns,
]


@pytest.fixture
def json_logs():
    """The console handler's output during the test, formatted as with LOG_FORMAT=json."""
    handler = next(
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, DatabaseErrorRedactor) for f in h.filters)
    )
    stream = io.StringIO()
    previous_stream = handler.setStream(stream)
    previous_formatter = handler.formatter
    handler.setFormatter(JsonFormatter())
    yield stream
    handler.setFormatter(previous_formatter)
    handler.setStream(previous_stream)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def scrape(client, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get("/metrics", headers=headers)


# --- /metrics -----------------------------------------------------------------------------


def test_metrics_are_not_found_without_a_configured_token(client, settings):
    settings.METRICS_TOKEN = ""

    response = scrape(client, token="")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert scrape(client, token="anything").status_code == 404


def test_metrics_are_not_found_with_a_wrong_token(client, settings):
    settings.METRICS_TOKEN = TOKEN

    assert scrape(client, token=None).status_code == 404
    assert scrape(client, token="wrong").status_code == 404


def test_metrics_count_requests_by_route_name_and_status(client, api, world, settings):
    settings.METRICS_TOKEN = TOKEN
    api.get("/project", key=world.keys["project"])
    api.get("/contacts/3f2a0000-0000-0000-0000-000000000000", key=world.keys["project"])
    api.get("/no/such/path")

    response = scrape(client)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'sendrealm_http_requests_total{method="GET",route="project-detail",status="200"}' in (
        text
    )
    assert 'route="contact-detail",status="404"' in text
    assert 'route="unmatched",status="404"' in text
    assert "3f2a0000" not in text
    assert 'sendrealm_http_request_duration_seconds_bucket{le="0.002",method="GET",route=' in text


def test_metrics_show_queue_depth_age_and_dead_letters(client, world, settings, clock):
    settings.METRICS_TOKEN = TOKEN
    for status, due in (
        (EventStatus.ACCEPTED, clock() - dt.timedelta(seconds=30)),
        (EventStatus.FAILED, clock() - dt.timedelta(seconds=5)),
        (EventStatus.DEAD_LETTERED, None),
    ):
        Event.objects.create(
            project=world.project,
            event="order.completed",
            occurred_at=clock(),
            status=status,
            next_attempt_at=due,
        )

    text = scrape(client).content.decode()

    assert 'sendrealm_workqueue_depth{queue="events.Event"} 2.0' in text
    assert 'sendrealm_workqueue_oldest_age_seconds{queue="events.Event"} 30.0' in text
    assert 'sendrealm_workqueue_dead_letters{queue="events.Event"} 1.0' in text
    for queue in ("messaging.EmailDelivery", "pushproviders.PushDelivery"):
        assert f'sendrealm_workqueue_depth{{queue="{queue}"}} 0.0' in text


def test_metrics_show_runs_by_status_and_work_outcomes(client, world, settings, clock):
    settings.METRICS_TOKEN = TOKEN
    AutomationRunFactory(automation__project=world.project, waiting=True)
    AutomationRunFactory(automation__project=world.project, waiting=True)
    AutomationRunFactory(automation__project=world.project, completed=True)
    Event.objects.create(
        project=world.project,
        event="order.completed",
        email="ada@example.com",
        occurred_at=clock(),
        next_attempt_at=clock(),
    )
    events_process_due(budget_seconds=5)

    text = scrape(client).content.decode()

    assert 'sendrealm_automation_runs{status="waiting"} 2.0' in text
    assert 'sendrealm_automation_runs{status="completed"} 1.0' in text
    assert 'sendrealm_automation_runs{status="failed"} 0.0' in text
    assert 'sendrealm_work_items_total{outcome="done",queue="events.Event"}' in text


def test_metrics_are_not_limited_by_an_api_key_rate(client, world, settings):
    settings.METRICS_TOKEN = TOKEN
    settings.API_RATE_LIMIT = 1

    assert {scrape(client).status_code for _ in range(3)} == {200}


# --- the request id -----------------------------------------------------------------------


def test_a_request_gets_an_id_or_keeps_the_one_it_brought(api, world):
    made = api.get("/project", key=world.keys["project"])
    kept = api.get("/project", key=world.keys["project"], headers={"X-Request-Id": "abc-123"})
    replaced = api.get("/project", key=world.keys["project"], headers={"X-Request-Id": "a b"})

    assert len(made.headers["X-Request-Id"]) == 32
    assert kept.headers["X-Request-Id"] == "abc-123"
    assert replaced.headers["X-Request-Id"] not in ("a b", "")
    assert api.get("/no/such/path").headers["X-Request-Id"]


@pytest.mark.urls(__name__)
def test_json_log_lines_carry_the_request_id(api, world, json_logs):
    response = api.get(
        "/tests/logs-something", key=world.keys["project"], headers={"X-Request-Id": "req-42"}
    )

    assert response.status_code == 200
    (entry,) = [e for e in lines(json_logs) if e["logger"] == "tests.requests"]
    assert entry["message"] == "Serving a test request"
    assert entry["request_id"] == "req-42"
    assert entry["level"] == "WARNING"
    assert entry["n"] == 7
    assert entry["time"].endswith("Z")


@pytest.mark.django_db(transaction=True)
def test_the_tasks_a_request_publishes_carry_its_id(api, world):
    published: list[dict[str, Any]] = []

    def capture(sender: Any = None, headers: Any = None, **kwargs: Any) -> None:
        published.append({"task": sender, **(headers or {})})

    # A wake-up an earlier test of this process sent would hold this one back (debounced).
    events_wake_rearm()
    before_task_publish.connect(capture, weak=False)
    try:
        response = api.post(
            "/events",
            {"event": "signed.up", "email": "ada@example.com"},
            key=world.keys["project"],
            headers={"X-Request-Id": "req-from-client"},
        )
        assert response.status_code == 202
        assert wake.flush(timeout=10)
    finally:
        before_task_publish.disconnect(capture)

    wakeups = [p for p in published if p["task"] == "events.process_batch"]
    assert wakeups
    assert {p["request_id"] for p in wakeups} == {"req-from-client"}


@shared_task(name="tests.logs_in_a_task")
def logs_in_a_task() -> None:
    logging.getLogger("tests.tasks").warning("Working for a request")


def test_a_task_logs_with_the_id_of_the_request_that_published_it(json_logs):
    logs_in_a_task.apply(headers={"request_id": "req-7"})

    (entry,) = [e for e in lines(json_logs) if e["logger"] == "tests.tasks"]
    assert entry["request_id"] == "req-7"
