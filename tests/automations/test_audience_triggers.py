"""Audience triggers (CONTRACT section 20): a run starts when a contact joins or leaves an
audience, exactly once per change, through the system events the audiences family
records with each change."""

import uuid

import pytest
from django.db.models.functions import Now

from automations.models import AutomationRun
from events.models import Event
from events.services.processing import events_process_batch
from tests.automations.api_driver import automation, drain, email_template
from tests.automations.conftest import error, issues

pytestmark = pytest.mark.django_db


def on_audience(member, audience_id, template_id):
    return {
        "trigger": {member: str(audience_id)},
        "start": "hello",
        "steps": [{"key": "hello", "type": "send_email", "template_id": template_id, "next": None}],
    }


@pytest.fixture
def audience_id(api, key):
    response = api.post("/audiences", {"name": "Beta testers"}, key=key)
    assert response.status_code == 201, response.json()
    return response.json()["data"]["id"]


@pytest.fixture
def contact_id(api, key):
    response = api.post("/contacts/upsert", {"email": "ada@example.net"}, key=key)
    assert response.status_code in (200, 201), response.json()
    return response.json()["data"]["id"]


def join(api, key, audience_id, contact_id):
    response = api.post(f"/audiences/{audience_id}/members", {"contact_id": contact_id}, key=key)
    assert response.status_code in (200, 201), response.json()


def leave(api, key, audience_id, contact_id):
    response = api.delete(f"/audiences/{audience_id}/members/{contact_id}", key=key)
    assert response.status_code in (200, 204), response.json()


def test_joining_starts_one_run_and_joining_again_starts_none(api, key, audience_id, contact_id):
    template = email_template(api, key)
    entered = automation(api, key, on_audience("audience_entered", audience_id, template))
    left = automation(api, key, on_audience("audience_left", audience_id, template))
    join(api, key, audience_id, contact_id)
    # Already a member: no change, no run.
    join(api, key, audience_id, contact_id)
    drain()
    (run,) = AutomationRun.objects.filter(automation_id=entered)
    assert str(run.contact_id) == contact_id
    assert run.trigger_event_name == "sendrealm.audience.entered"
    assert run.trigger_payload["audience_id"] == audience_id
    assert run.status == "completed"
    assert not AutomationRun.objects.filter(automation_id=left).exists()

    leave(api, key, audience_id, contact_id)
    drain()
    (gone,) = AutomationRun.objects.filter(automation_id=left)
    assert gone.trigger_event_name == "sendrealm.audience.left"
    # Joining again is a new change: a new run.
    join(api, key, audience_id, contact_id)
    drain()
    assert AutomationRun.objects.filter(automation_id=entered).count() == 2


def test_another_audiences_changes_start_nothing(api, key, audience_id, contact_id):
    template = email_template(api, key)
    other = api.post("/audiences", {"name": "Others"}, key=key).json()["data"]["id"]
    automation(api, key, on_audience("audience_entered", audience_id, template))
    join(api, key, other, contact_id)
    drain()
    assert not AutomationRun.objects.exists()


def test_an_audience_event_processed_twice_starts_one_run(api, key, audience_id, contact_id):
    template = email_template(api, key)
    automation(api, key, on_audience("audience_entered", audience_id, template))
    join(api, key, audience_id, contact_id)
    events_process_batch()
    # The event is processed again (a worker that died after committing, say).
    again = Event.objects.filter(event="sendrealm.audience.entered")
    assert again.update(status="accepted", processed_at=None, next_attempt_at=Now()) == 1
    assert events_process_batch().claimed == 1
    drain()
    assert AutomationRun.objects.count() == 1


def test_a_trigger_names_one_thing(api, key, audience_id):
    template = email_template(api, key)
    both = on_audience("audience_entered", audience_id, template)
    both["trigger"]["event"] = "user.signed_up"
    response = api.post("/automations", {"name": "x", "definition": both}, key=key)
    assert response.status_code == 400
    assert issues(response) == [("definition.trigger", "invalid_trigger")]
    bad = on_audience("audience_left", "nope", template)
    response = api.post("/automations", {"name": "x", "definition": bad}, key=key)
    assert issues(response) == [("definition.trigger.audience_left", "invalid_uuid")]


def test_publishing_needs_an_audience_of_the_project(api, key, world):
    template = email_template(api, key)
    foreign = api.post("/audiences", {"name": "Theirs"}, key=world.keys["other_project"])
    for audience in (uuid.uuid4(), foreign.json()["data"]["id"]):
        definition = on_audience("audience_entered", audience, template)
        automation_id = automation(api, key, definition, publish=False)
        response = api.post(f"/automations/{automation_id}/actions/publish", {}, key=key)
        assert error(response) == (409, "conflict")
        assert issues(response) == [("definition.trigger.audience_entered", "not_found")]
