"""The project's event retry policies: set through PATCH /project, used by processing."""

import pytest

from events.models import Event, EventStatus
from events.services.processing import events_process_batch

pytestmark = pytest.mark.django_db

DEFAULTS = {
    "event_retry_base_seconds": None,
    "event_retry_factor": None,
    "event_retry_cap_seconds": None,
    "event_retry_max_attempts": None,
}


def test_retry_policies_default_to_the_service_values(api, world):
    policies = api.get("/project", key=world.keys["project"]).json()["data"]["policies"]
    assert {name: policies[name] for name in DEFAULTS} == DEFAULTS


@pytest.mark.parametrize(
    ("policy", "value"),
    [
        ("event_retry_base_seconds", 0),
        ("event_retry_factor", 0.5),
        ("event_retry_cap_seconds", 100000),
        ("event_retry_max_attempts", 0),
        ("event_retry_max_attempts", "many"),
    ],
)
def test_a_retry_policy_out_of_range_is_400_and_changes_nothing(api, world, policy, value):
    response = api.patch("/project", {"policies": {policy: value}}, key=world.keys["project"])
    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["path"] == f"policies.{policy}"
    world.project.refresh_from_db()
    assert getattr(world.project, policy) is None


def test_a_project_retry_policy_decides_when_an_event_is_dead_lettered(api, world, clock):
    response = api.patch(
        "/project",
        {"policies": {"event_retry_max_attempts": 2, "event_retry_cap_seconds": 5}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    # An external id nobody has: processing fails and retries, as the client may still be
    # creating the contact.
    accepted = api.post(
        "/events", {"event": "signed_in", "external_id": "nobody"}, key=world.keys["project"]
    )
    event_id = accepted.json()["data"]["id"]

    events_process_batch()
    event = Event.objects.get(id=event_id)
    assert (event.status, event.attempts) == (EventStatus.FAILED, 1)
    assert (event.next_attempt_at - clock.current).total_seconds() <= 5

    clock.advance(seconds=6)
    events_process_batch()
    event.refresh_from_db()
    assert (event.status, event.attempts) == (EventStatus.DEAD_LETTERED, 2)

    reset = api.patch(
        "/project", {"policies": {"event_retry_max_attempts": None}}, key=world.keys["project"]
    )
    assert reset.json()["data"]["policies"]["event_retry_max_attempts"] is None
