"""Test runs show whether their contact would be held out and which split branch it would
take (CONTRACT section 20), as a live run of the same contact would decide."""

import pytest

from tests.automations.api_driver import automation, drain, email_template, event, runs
from tests.automations.test_goals import held_out
from tests.automations.test_splits import ab_test, expected_branch

pytestmark = pytest.mark.django_db


def tried_run(api, key, automation_id, **body):
    response = api.post(f"/automations/{automation_id}/test-runs", body, key=key)
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def test_a_test_run_shows_the_holdout_and_the_branch_a_live_run_would_take(api, key, clock):
    template = email_template(api, key)
    definition = ab_test(template, settings={"holdout_percent": 50})
    automation_id = automation(api, key, definition)
    people = [f"t{n}@example.net" for n in range(10)]
    for email in people:
        event(api, key, "user.signed_up", email=email)
    drain()
    live = {run["contact_id"]: run for run in runs(api, key, automation_id)}
    for contact_id, run in live.items():
        tried = tried_run(api, key, automation_id, contact_id=contact_id)
        assert tried["would_be_held_out"] == held_out(automation_id, contact_id, 50)
        assert tried["would_be_held_out"] == (run["status"] == "holdout")
        # The steps are walked either way: the split's outcome is the contact's branch.
        branch = tried["steps"][0]["outcome"]
        assert branch == expected_branch(automation_id, contact_id, 50)
        if run["status"] != "holdout":
            assert run["steps"][0]["outcome"] == branch
        assert run["would_be_held_out"] is None


def test_a_test_by_an_unknown_address_cannot_tell_the_holdout(api, key):
    template = email_template(api, key)
    automation_id = automation(api, key, ab_test(template, settings={"holdout_percent": 10}))
    tried = tried_run(api, key, automation_id, email="nobody-yet@example.net")
    assert tried["would_be_held_out"] is None
    assert tried["steps"][0]["outcome"] in ("a", "b")


def test_without_a_holdout_no_one_would_be_held_out(api, key):
    template = email_template(api, key)
    automation_id = automation(api, key, ab_test(template))
    contact = api.post("/contacts/upsert", {"email": "x@example.net"}, key=key).json()["data"]
    assert (
        tried_run(api, key, automation_id, contact_id=contact["id"])["would_be_held_out"] is False
    )
