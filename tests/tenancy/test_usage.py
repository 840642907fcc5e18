"""Usage metering and plan quotas against real Redis and PostgreSQL: what is counted, the
fold into day rows (also after a crash), GET /project/usage and the 422 over a quota."""

import datetime as dt
from collections.abc import Iterator

import pytest

from automations.services.advance import runs_advance_due
from automations.services.triggers import triggers_forget_local
from bench import keys
from config.net import netguard
from config.runtime.redisclient import redis_client
from events.models import Event
from events.services.processing import events_process_due
from messaging.models import Email
from messaging.services.delivery import emails_deliver_batch
from pushproviders.models import PushMessage
from tenancy.models import Meter, UsageDay, UsageFold
from tenancy.services import team_plan_set
from tenancy.usage import DIRTY, _script, day_key, usage_flush, usage_record
from tenancy.usage_days import _FOLD_CLAIM, FOLDING, _fold_one, usage_days, usage_fold
from tests.automations.factories import AutomationFactory
from tests.factories import PlanFactory
from tests.messaging.factories_templates import TemplateVersionFactory
from tests.messaging.smtp_server import SmtpServer, smtp_server_for
from tests.pushproviders.conftest import fake_resolve
from tests.pushproviders.sending import push_world

# Counts are recorded after commit, as in production: every test commits for real.
pytestmark = pytest.mark.django_db(transaction=True)

TODAY = dt.date(2026, 1, 1)


@pytest.fixture
def smtp(settings) -> Iterator[SmtpServer]:
    yield from smtp_server_for(settings)


def event(name: str = "order.completed", **extra):
    return {"event": name, "email": "ada@example.com", **extra}


def usage(api, world, **params):
    response = api.get("/project/usage", params or None, key=world.keys["project"])
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def on_plan(world, **quotas):
    plan = PlanFactory(**{f"{meter}_per_month": value for meter, value in quotas.items()})
    team_plan_set(team=world.team, plan=plan)
    return plan


# --- GET /project/usage -------------------------------------------------------------------


def test_usage_counts_accepted_events_and_not_their_resends(api, world, clock):
    key = world.keys["project"]
    assert api.post("/events", event(idempotency_key="a"), key=key).status_code == 202
    assert api.post("/events", event(idempotency_key="a"), key=key).status_code == 200
    batch = {"events": [event(idempotency_key="a"), event(), event(), {"event": "Bad"}]}
    assert api.post("/events/batch", batch, key=key).json()["data"]["accepted"] == 2

    data = usage(api, world)

    assert data["totals"]["events_ingested"] == 3
    assert data["days"] == [
        {
            "date": "2026-01-01",
            "events_ingested": 3,
            "runs_started": 0,
            "waits_created": 0,
            "template_tests": 0,
            "emails_sent": 0,
            "push_sent": 0,
        }
    ]
    assert data["plan"] == {
        "name": "default",
        "period_start": "2026-01-01T00:00:00Z",
        "quotas": dict.fromkeys(Meter.values),
    }


def test_usage_defaults_to_the_current_month_up_to_today(api, world, clock):
    clock.set(dt.datetime(2026, 3, 4, 9, 0, tzinfo=dt.UTC))

    data = usage(api, world)

    assert [day["date"] for day in data["days"]] == [
        "2026-03-01",
        "2026-03-02",
        "2026-03-03",
        "2026-03-04",
    ]
    assert data["plan"]["period_start"] == "2026-03-01T00:00:00Z"


def test_usage_of_other_projects_is_not_counted(api, world, clock):
    api.post("/events", event(), key=world.keys["other_project"])

    assert usage(api, world)["totals"]["events_ingested"] == 0


@pytest.mark.parametrize(
    ("params", "path", "code"),
    [
        ({"from": "2026-13-01"}, "from", "invalid_date"),
        ({"to": "yesterday"}, "to", "invalid_date"),
        ({"from": "2026-1-1"}, "from", "invalid_date"),
        ({"from": "2026-02-01", "to": "2026-01-01"}, "to", "invalid_range"),
        ({"from": "2024-12-31", "to": "2026-01-01"}, "to", "range_too_long"),
    ],
)
def test_usage_refuses_bad_dates_and_ranges(api, world, clock, params, path, code):
    response = api.get("/project/usage", params, key=world.keys["project"])

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert [(i["path"], i["code"]) for i in error["issues"]] == [(path, code)]


def test_usage_needs_a_key_that_may_read(api, world):
    assert api.get("/project/usage").status_code == 401
    assert api.get("/project/usage", key=world.keys["sending"]).status_code == 403
    assert api.get("/project/usage", key=world.keys["read_only"]).status_code == 200


# --- counting and folding -----------------------------------------------------------------


def test_folded_and_live_counts_add_up_exactly(world, clock):
    usage_record(project=world.project, meter=Meter.EVENTS_INGESTED, count=5)
    usage_flush()
    assert usage_fold() == 1
    usage_record(project=world.project, meter=Meter.EVENTS_INGESTED, count=2)
    usage_record(project=world.project, meter=Meter.TEMPLATE_TESTS)

    days = usage_days(project=world.project, start=TODAY, end=TODAY)

    assert days[TODAY]["events_ingested"] == 7
    assert days[TODAY]["template_tests"] == 1
    row = UsageDay.objects.get(project=world.project, date=TODAY)
    assert row.events_ingested == 5


def test_a_fold_run_twice_adds_nothing_twice(world, clock):
    usage_record(project=world.project, meter=Meter.EMAILS_SENT, count=3)
    usage_flush()

    usage_fold()
    usage_fold()

    assert UsageDay.objects.get(project=world.project, date=TODAY).emails_sent == 3
    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["emails_sent"] == 3


def test_a_fold_that_crashed_before_its_commit_is_finished_by_the_next_run(world, clock):
    client = redis_client()
    usage_record(project=world.project, meter=Meter.EVENTS_INGESTED, count=4)
    usage_flush()
    # The crashed run renamed the day hash and stopped before writing the row.
    _script(client, _FOLD_CLAIM)(keys=[DIRTY, FOLDING], args=["usage:f:crashed", 10, 0])
    assert not client.exists(day_key(str(world.project.id), TODAY))

    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["events_ingested"] == 4
    usage_fold()

    assert UsageDay.objects.get(project=world.project, date=TODAY).events_ingested == 4
    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["events_ingested"] == 4


def test_a_fold_that_crashed_after_its_commit_is_not_added_again(world, clock):
    client = redis_client()
    usage_record(project=world.project, meter=Meter.EVENTS_INGESTED, count=6)
    usage_flush()
    (fold,) = _script(client, _FOLD_CLAIM)(
        keys=[DIRTY, FOLDING], args=["usage:f:crashed", 10, clock().timestamp()]
    )
    # The row and the token committed; the run died before dropping the fold key.
    assert _fold_one(client, fold.decode(), clock())

    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["events_ingested"] == 6
    usage_fold()

    assert UsageDay.objects.get(project=world.project, date=TODAY).events_ingested == 6
    assert UsageFold.objects.count() == 1
    assert usage_days(project=world.project, start=TODAY, end=TODAY)[TODAY]["events_ingested"] == 6


def test_emails_are_metered_when_the_smtp_server_accepts_them(api, world, smtp, clock):
    body = {"from": "a@example.com", "to": "ada@example.net", "subject": "Hi", "text": "Yo"}
    assert api.post("/emails", body, key=world.keys["project"]).status_code == 201
    assert usage(api, world)["totals"]["emails_sent"] == 0

    emails_deliver_batch()

    assert len(smtp.received) == 1
    assert usage(api, world)["totals"]["emails_sent"] == 1


def test_template_tests_are_metered_and_failed_ones_are_not(api, world, smtp, clock):
    version = TemplateVersionFactory(template__project=world.project)
    path = f"/templates/{version.template_id}/test"
    # No sender anywhere: refused, and not counted.
    assert api.post(path, {"to": "ada@example.net"}, key=world.keys["project"]).status_code == 400
    version.template.from_email = "team@example.com"
    version.template.save()

    response = api.post(path, {"to": "ada@example.net"}, key=world.keys["project"])

    assert response.status_code == 202, response.json()
    assert usage(api, world)["totals"]["template_tests"] == 1


# --- quotas -------------------------------------------------------------------------------


def test_an_event_over_the_quota_is_refused_and_not_stored(api, world, clock):
    on_plan(world, events_ingested=2)
    key = world.keys["project"]
    assert api.post("/events", event(idempotency_key="one"), key=key).status_code == 202
    assert api.post("/events", event(), key=key).status_code == 202

    response = api.post("/events", event(), key=key)

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "plan_limit_exceeded"
    assert "events_ingested" in error["details"]
    assert "limit 2 per month" in error["details"]
    assert "resets at 2026-02-01T00:00:00Z" in error["details"]
    assert Event.objects.filter(project=world.project).count() == 2
    # A resend of an event already stored is answered as the duplicate it is.
    resend = api.post("/events", event(idempotency_key="one"), key=key)
    assert resend.status_code == 200
    assert resend.json()["data"]["duplicate"] is True
    assert usage(api, world)["totals"]["events_ingested"] == 2


def test_a_batch_must_fit_in_what_is_left_of_the_quota(api, world, clock):
    on_plan(world, events_ingested=5)
    key = world.keys["project"]
    api.post("/events/batch", {"events": [event(idempotency_key="k0"), event()]}, key=key)

    too_many = api.post("/events/batch", {"events": [event() for _ in range(4)]}, key=key)

    assert too_many.status_code == 422
    assert too_many.json()["error"]["code"] == "plan_limit_exceeded"
    assert "3 left, 4 asked" in too_many.json()["error"]["details"]
    assert Event.objects.filter(project=world.project).count() == 2
    # Resends take no room: three new events and one resend fit in three.
    fits = [event(), event(), event(), event(idempotency_key="k0")]
    response = api.post("/events/batch", {"events": fits}, key=key)
    assert response.status_code == 202
    assert response.json()["data"]["accepted"] == 3
    assert response.json()["data"]["duplicates"] == 1
    assert Event.objects.filter(project=world.project).count() == 5


def test_a_quota_is_the_teams_across_its_projects(api, world, clock):
    on_plan(world, events_ingested=1)
    assert api.post("/events", event(), key=world.keys["other_project"]).status_code == 202

    assert api.post("/events", event(), key=world.keys["project"]).status_code == 422


def test_the_quota_starts_again_with_the_month(api, world, clock):
    on_plan(world, events_ingested=1)
    key = world.keys["project"]
    assert api.post("/events", event(), key=key).status_code == 202
    assert api.post("/events", event(), key=key).status_code == 422

    clock.set(dt.datetime(2026, 2, 1, 0, 0, tzinfo=dt.UTC))

    assert api.post("/events", event(), key=key).status_code == 202


def test_the_quota_counts_what_was_folded_before_redis_lost_its_counters(api, world, clock):
    key = world.keys["project"]
    for _ in range(3):
        api.post("/events", event(), key=key)
    usage_flush()
    usage_fold()
    redis_client().flushdb()
    on_plan(world, events_ingested=3)

    assert api.post("/events", event(), key=key).status_code == 422


def test_an_email_over_the_quota_is_refused_and_not_stored(api, world, clock):
    on_plan(world, emails_sent=1)
    body = {"from": "a@example.com", "to": "ada@example.net", "subject": "Hi", "text": "Yo"}
    assert api.post("/emails", body, key=world.keys["project"]).status_code == 201

    response = api.post("/emails", body, key=world.keys["project"])

    assert response.status_code == 422
    assert "emails_sent" in response.json()["error"]["details"]
    assert Email.objects.filter(project=world.project).count() == 1


def test_a_template_test_over_the_quota_is_refused(api, world, clock):
    on_plan(world, template_tests=0)
    version = TemplateVersionFactory(
        template__project=world.project, template__from_email="team@example.com"
    )

    response = api.post(
        f"/templates/{version.template_id}/test",
        {"to": "ada@example.net"},
        key=world.keys["project"],
    )

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "plan_limit_exceeded"
    assert Email.objects.filter(project=world.project).count() == 0


def test_the_usage_shows_the_plan_and_its_quotas(api, world, clock):
    plan = on_plan(world, events_ingested=100, emails_sent=10)

    data = usage(api, world)

    assert data["plan"]["name"] == plan.name
    assert data["plan"]["quotas"]["events_ingested"] == 100
    assert data["plan"]["quotas"]["emails_sent"] == 10
    assert data["plan"]["quotas"]["push_sent"] is None


@pytest.fixture
def push_names() -> Iterator[None]:
    # The providers' hosts, as the push tests resolve them (no DNS here).
    netguard.set_resolver(fake_resolve)
    yield
    netguard.set_resolver(None)


def test_a_push_send_needs_room_for_every_delivery_it_queues(api, world, clock, push_names):
    push = push_world(api, world)
    push.fcm()
    push.apns()
    ada = push.contact(first_name="Ada")
    first = push.install(ada, "fcm", "fcm-device-token-0001")
    push.install(ada, "apns", keys.APNS_TOKEN)
    on_plan(world, push_sent=2)
    test = {"installation_id": str(first.id), "title": "Test"}
    assert api.post("/push/tests", test, key=world.keys["project"]).status_code == 202

    # Two deliveries, one left: refused whole, nothing stored.
    response = push.send({"contact_id": str(ada.id), "title": "Hi", "body": "Shipped"})

    assert response.status_code == 422
    assert "meter push_sent; limit 2 per month" in response.json()["error"]["details"]
    assert "1 left, 2 asked" in response.json()["error"]["details"]
    assert PushMessage.objects.filter(project=world.project).count() == 1
    assert api.post("/push/tests", test, key=world.keys["project"]).status_code == 202
    assert api.post("/push/tests", test, key=world.keys["project"]).status_code == 422


def test_the_engine_meters_the_runs_it_starts_and_the_waits_it_enters(api, world, clock):
    AutomationFactory(project=world.project, published=True)
    triggers_forget_local()
    body = {"event": "order.completed", "email": "ada@example.com"}
    assert api.post("/events", body, key=world.keys["project"]).status_code == 202

    events_process_due(budget_seconds=10)
    runs_advance_due(budget_seconds=10)

    totals = usage(api, world)["totals"]
    assert (totals["runs_started"], totals["waits_created"]) == (1, 1)
