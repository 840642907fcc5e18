"""`GET /automations/{id}/report` (CONTRACT section 20): counts kept as runs change, read
without scanning the runs, and the lift's interval checked against the formula written
out here with plain floats."""

import datetime as dt
import math

import pytest

from automations.models import AutomationRun, ReportCount
from tests.automations.api_driver import automation, drain, email_template, event, runs
from tests.automations.conftest import error
from tests.automations.test_goals import PURCHASE, START, flow

pytestmark = pytest.mark.django_db


@pytest.fixture
def template(api, key):
    return email_template(api, key)


def report(api, key, automation_id, **params):
    response = api.get(f"/automations/{automation_id}/report", params, key=key)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def katz_lift(x_t, n_t, x_h, n_h):
    """The relative difference of two proportions with Katz's log interval, by hand."""
    p_t, p_h = x_t / n_t, x_h / n_h
    ratio = p_t / p_h
    se = math.sqrt((1 - p_t) / x_t + (1 - p_h) / x_h)
    z = 1.959963984540054
    return ratio - 1, [
        math.exp(math.log(ratio) - z * se) - 1,
        math.exp(math.log(ratio) + z * se) - 1,
    ]


def test_the_report_counts_runs_steps_conversions_and_the_holdout(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE, holdout_percent=50))
    clock.set(START)
    people = [f"r{n}@example.net" for n in range(20)]
    for email in people:
        event(api, key, "user.signed_up", email=email)
    drain()
    clock.advance(hours=3)
    for email in people[:10]:
        event(api, key, "order.completed", payload={"total": 20}, email=email)
    drain()
    # Past the day's wait: the treated runs send their second email.
    clock.advance(days=1)
    drain()

    found = runs(api, key, automation_id)
    treated = [run for run in found if run["status"] != "holdout"]
    held = [run for run in found if run["status"] == "holdout"]
    converted_t = sum(run["converted_at"] is not None for run in treated)
    converted_h = sum(run["converted_at"] is not None for run in held)
    data = report(api, key, automation_id)
    assert data["entered"] == len(treated)
    assert data["converted"] == converted_t
    assert data["conversion_rate"] == pytest.approx(converted_t / len(treated))
    assert data["holdout"] == {
        "entered": len(held),
        "converted": converted_h,
        "conversion_rate": pytest.approx(converted_h / len(held)),
    }
    # Which contacts are held out depends on the automation's (random) id: every case of
    # the rule is checked.
    if converted_h and converted_t:
        lift, interval = katz_lift(converted_t, len(treated), converted_h, len(held))
        assert data["lift"] == pytest.approx(lift)
        assert data["lift_ci95"] == pytest.approx(interval)
    elif converted_h:
        assert data["lift"] == pytest.approx(-1.0)
        assert data["lift_ci95"] is None
    else:
        assert (data["lift"], data["lift_ci95"]) == (None, None)
    # Every treated run took every step; converted ones converted at the wait.
    assert data["steps"] == [
        {"key": key_, "entered": len(treated), "completed": len(treated), "converted": converted_t}
        for key_ in ("hello", "pause", "nudge")
    ]
    assert data["branches"] == []
    # The counts are those of the runs.
    assert AutomationRun.objects.count() == 20


def test_the_lift_and_its_interval_follow_katz_log_method(api, key, world):
    automation_id = automation(api, key, flow(email_template(api, key)))
    day = dt.date(2026, 3, 1)
    ReportCount.objects.bulk_create(
        [
            ReportCount(automation_id=automation_id, day=day, shard=0, entered=600, converted=90),
            ReportCount(automation_id=automation_id, day=day, shard=1, entered=400, converted=60),
            ReportCount(
                automation_id=automation_id,
                day=day,
                holdout=True,
                shard=3,
                entered=200,
                converted=20,
            ),
        ]
    )
    data = report(api, key, automation_id)
    assert (data["entered"], data["converted"]) == (1000, 150)
    assert data["conversion_rate"] == pytest.approx(0.15)
    assert data["holdout"] == {"entered": 200, "converted": 20, "conversion_rate": 0.1}
    lift, interval = katz_lift(150, 1000, 20, 200)
    assert data["lift"] == pytest.approx(0.5)
    assert data["lift"] == pytest.approx(lift, rel=1e-12)
    assert data["lift_ci95"] == pytest.approx(interval, rel=1e-12)
    # By hand once more: se = sqrt(0.85/150 + 0.9/20) = 0.22509..., exp(ln 1.5 ± 1.96 se).
    assert data["lift_ci95"] == pytest.approx([-0.0351, 1.3318], abs=1e-4)


def test_rates_and_the_lift_are_null_when_they_cannot_be_worked_out(api, key):
    automation_id = automation(api, key, flow(email_template(api, key)))
    empty = report(api, key, automation_id)
    assert empty["conversion_rate"] is None
    assert empty["holdout"] == {"entered": 0, "converted": 0, "conversion_rate": None}
    assert (empty["lift"], empty["lift_ci95"]) == (None, None)
    assert [step["key"] for step in empty["steps"]] == ["hello", "pause", "nudge"]
    day = dt.date(2026, 3, 1)
    ReportCount.objects.bulk_create(
        [
            ReportCount(automation_id=automation_id, day=day, shard=0, entered=10, converted=0),
            ReportCount(
                automation_id=automation_id,
                day=day,
                holdout=True,
                shard=0,
                entered=5,
                converted=1,
            ),
        ]
    )
    data = report(api, key, automation_id)
    # A ratio, but no log of it: no interval.
    assert data["lift"] == pytest.approx(-1.0)
    assert data["lift_ci95"] is None


def test_from_and_to_choose_the_days_runs_entered(api, key, clock, template):
    automation_id = automation(api, key, flow(template, goal=PURCHASE))
    for day, email in ((1, "a@example.net"), (2, "b@example.net"), (3, "c@example.net")):
        clock.set(dt.datetime(2026, 1, day, 23, 59, tzinfo=dt.UTC))
        event(api, key, "user.signed_up", email=email)
    drain()
    # b converts on the 4th: counted on the day it entered.
    clock.set(dt.datetime(2026, 1, 4, 1, 0, tzinfo=dt.UTC))
    event(api, key, "order.completed", payload={"total": 10}, email="b@example.net")
    drain()
    assert report(api, key, automation_id)["entered"] == 3
    only_2nd = report(api, key, automation_id, **{"from": "2026-01-02", "to": "2026-01-02"})
    assert (only_2nd["entered"], only_2nd["converted"]) == (1, 1)
    assert report(api, key, automation_id, **{"from": "2026-01-02"})["entered"] == 2
    assert report(api, key, automation_id, to="2026-01-01")["converted"] == 0


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"from": "2026-1-1"}, ("from", "invalid_date")),
        ({"to": "2026-02-30"}, ("to", "invalid_date")),
        ({"from": "2026-01-03", "to": "2026-01-02"}, ("to", "invalid_range")),
    ],
)
def test_bad_days_are_refused(api, key, params, expected):
    automation_id = automation(api, key, flow(email_template(api, key)))
    response = api.get(f"/automations/{automation_id}/report", params, key=key)
    assert error(response) == (400, "validation_error")
    assert [(i["path"], i["code"]) for i in response.json()["error"]["issues"]] == [expected]


@pytest.mark.parametrize(
    ("persona", "status"),
    [("read_only", 200), ("personal_viewer", 200), ("other_project", 404), ("foreign", 404)],
)
def test_who_may_read_a_report(api, key, world, persona, status):
    automation_id = automation(api, key, flow(email_template(api, key)))
    project = world.project.id if persona.startswith("personal") else None
    response = api.get(
        f"/automations/{automation_id}/report", key=world.keys[persona], project=project
    )
    assert response.status_code == status, response.json()


def test_the_report_reads_the_counts_in_a_constant_number_of_queries(
    api, key, django_assert_max_num_queries
):
    automation_id = automation(api, key, flow(email_template(api, key)))
    ReportCount.objects.bulk_create(
        ReportCount(
            automation_id=automation_id,
            day=dt.date(2026, 1, 1) + dt.timedelta(days=n // 16),
            holdout=(n // 16) % 10 == 0,
            shard=n % 16,
            entered=3,
            converted=1,
        )
        for n in range(3000)
    )
    with django_assert_max_num_queries(8):
        data = report(api, key, automation_id)
    assert data["entered"] + data["holdout"]["entered"] == 9000


def test_steps_of_older_versions_follow_the_published_ones(api, key, clock, template):
    automation_id = automation(api, key, flow(template))
    clock.set(START)
    event(api, key, "user.signed_up")
    drain()
    shorter = flow(template)
    shorter["steps"] = [{**shorter["steps"][0], "next": None}]
    response = api.patch(f"/automations/{automation_id}", {"definition": shorter}, key=key)
    assert response.status_code == 200, response.json()
    published = api.post(f"/automations/{automation_id}/actions/publish", {}, key=key)
    assert published.status_code == 200, published.json()
    data = report(api, key, automation_id)
    assert [(s["key"], s["entered"]) for s in data["steps"]] == [("hello", 1), ("pause", 1)]


def test_the_console_shows_conversion_against_the_holdout(api, key, admin_client):
    automation_id = automation(api, key, flow(email_template(api, key), goal=PURCHASE))
    day = dt.date(2026, 3, 1)
    ReportCount.objects.bulk_create(
        [
            ReportCount(automation_id=automation_id, day=day, shard=0, entered=1000, converted=150),
            ReportCount(
                automation_id=automation_id,
                day=day,
                holdout=True,
                shard=1,
                entered=200,
                converted=20,
            ),
        ]
    )

    page = admin_client.get(f"/admin/automations/automation/{automation_id}/change/")

    html = page.content.decode()
    assert page.status_code == 200
    assert "Conversion rate, %, against the holdout" in html
    assert "<tr><th>treated</th><td>1000</td><td>150</td></tr>" in html
    assert "<tr><th>holdout</th><td>200</td><td>20</td></tr>" in html
    # Lift 0.5, Katz interval [-0.0351, 1.3318] (the test above works it out).
    assert "+50.0 % (95 % interval -3.5 to +133.2 %)" in html
