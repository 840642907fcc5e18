"""Split steps (CONTRACT section 20): a deterministic share of contacts per branch, the
branch as the step's outcome, and each branch's conversions in the report."""

import hashlib

import pytest

from automations.models import RunStep
from messaging.models import Email
from tests.automations.api_driver import automation, drain, email_template, event, runs
from tests.automations.conftest import issues
from tests.automations.test_goals import PURCHASE, START

pytestmark = pytest.mark.django_db


def ab_test(template_id, *, percents=(50, 50), **extra):
    """Signed up: a split between an email (`a`) and nothing (`b`)."""
    return {
        "trigger": {"event": "user.signed_up"},
        "start": "ab",
        "steps": [
            {
                "key": "ab",
                "type": "split",
                "branches": [
                    {"key": "a", "percent": percents[0], "next": "hello"},
                    {"key": "b", "percent": percents[1], "next": None},
                ],
                "next": None,
            },
            {"key": "hello", "type": "send_email", "template_id": template_id, "next": None},
        ],
        **extra,
    }


def expected_branch(automation_id, contact_id, percent_a) -> str:
    """The contract's rule worked out here: the bucket of a hash of automation, step and
    contact; branch `a` takes the first `percent_a` hundredths."""
    digest = hashlib.sha256(f"{automation_id}:ab:{contact_id}".encode()).digest()
    return "a" if int.from_bytes(digest[:8], "big") % 10_000 < percent_a * 100 else "b"


@pytest.fixture
def template(api, key):
    return email_template(api, key)


def test_each_contact_takes_its_branch_and_always_the_same(api, key, clock, template):
    automation_id = automation(api, key, ab_test(template))
    clock.set(START)
    people = [f"s{n}@example.net" for n in range(12)]
    for _ in range(2):
        for email in people:
            event(api, key, "user.signed_up", email=email)
        clock.advance(minutes=1)
    drain()
    found = runs(api, key, automation_id)
    assert len(found) == 24
    taken: dict[str, set[str]] = {}
    for run in found:
        (first, *rest) = run["steps"]
        assert (first["key"], first["status"]) == ("ab", "completed")
        assert first["outcome"] == expected_branch(automation_id, run["contact_id"], 50)
        assert [step["key"] for step in rest] == (["hello"] if first["outcome"] == "a" else [])
        taken.setdefault(run["contact_id"], set()).add(first["outcome"])
    assert all(len(each) == 1 for each in taken.values())
    assert Email.objects.count() == 2 * sum("a" in each for each in taken.values())


def test_percents_are_taken_in_hundredths(api, key, template):
    def made(percents):
        body = {"name": "x", "definition": ab_test(template, percents=percents)}
        return api.post("/automations", body, key=key).status_code

    assert made((99.99, 0.01)) == 201
    assert made((99.995, 0.01)) == 400


def test_the_report_gives_each_branch_its_conversions(api, key, clock, template):
    automation_id = automation(api, key, ab_test(template, goal=PURCHASE))
    clock.set(START)
    people = [f"c{n}@example.net" for n in range(12)]
    for email in people:
        event(api, key, "user.signed_up", email=email)
    drain()
    clock.advance(hours=1)
    for email in people[:6]:
        event(api, key, "order.completed", payload={"total": 10}, email=email)
    drain()
    by_branch = {"a": [0, 0], "b": [0, 0]}
    for run in runs(api, key, automation_id):
        branch = run["steps"][0]["outcome"]
        by_branch[branch][0] += 1
        by_branch[branch][1] += run["converted_at"] is not None
    data = api.get(f"/automations/{automation_id}/report", key=key).json()["data"]
    assert data["branches"] == [
        {
            "step_key": "ab",
            "branch_key": branch,
            "entered": entered,
            "converted": converted,
            "conversion_rate": pytest.approx(converted / entered) if entered else None,
        }
        for branch, (entered, converted) in by_branch.items()
    ]
    assert data["steps"][0] == {"key": "ab", "entered": 12, "completed": 12, "converted": 6}
    assert RunStep.objects.filter(step_key="ab").count() == 12
    assert data["converted"] == 6


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["steps"][0]["branches"][1].update(percent=40),
            [("definition.steps.0.branches", "invalid_percent")],
        ),
        (
            lambda d: d["steps"][0]["branches"][1].update(key="a"),
            [("definition.steps.0.branches.1.key", "duplicate_key")],
        ),
        (
            lambda d: d["steps"][0]["branches"][0].update(next="nowhere"),
            [("definition.steps.0.branches.0.next", "unknown_step")],
        ),
        (
            lambda d: d["steps"][0].update(next="hello"),
            [("definition.steps.0.next", "invalid_value")],
        ),
        (
            lambda d: d["steps"][0]["branches"][0].update(next=None),
            [("definition.steps.1", "unreachable")],
        ),
        (
            lambda d: d["steps"][0].update(branches=[{"key": "a", "percent": 100, "next": None}]),
            [("definition.steps.0.branches", "out_of_range")],
        ),
    ],
)
def test_bad_splits_are_refused_with_their_paths(api, key, template, change, expected):
    definition = ab_test(template)
    change(definition)
    response = api.post("/automations", {"name": "Flow", "definition": definition}, key=key)
    assert response.status_code == 400, response.json()
    assert issues(response) == expected


def test_a_loop_through_a_split_without_a_wait_is_refused(api, key, template):
    definition = ab_test(template)
    definition["steps"][1]["next"] = "ab"
    response = api.post("/automations", {"name": "Flow", "definition": definition}, key=key)
    assert response.status_code == 400
    assert [code for _, code in issues(response)] == ["cycle_without_wait"]
