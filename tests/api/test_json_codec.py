"""The JSON codec: the fast renderer must answer exactly what the standard one would."""

import json

import pytest

from contacts.models import Contact
from events.models import Event

pytestmark = pytest.mark.django_db

HUGE = 2**70


def test_an_integer_beyond_64_bits_is_stored_and_answered_exactly(api, world):
    response = api.post(
        "/contacts/upsert",
        raw=json.dumps({"email": "big@example.com", "fields": {"n": HUGE}}),
        key=world.keys["project"],
    )
    assert response.status_code == 201
    assert json.loads(response.content)["data"]["fields"]["n"] == HUGE
    assert Contact.objects.get(email="big@example.com").fields["n"] == HUGE


def test_an_event_payload_with_a_huge_integer_is_accepted(api, world):
    body = {"event": "order.completed", "email": "a@example.com", "payload": {"n": HUGE}}
    response = api.post("/events", raw=json.dumps(body), key=world.keys["project"])
    assert response.status_code == 202
    assert Event.objects.get(id=response.json()["data"]["id"]).payload["n"] == HUGE


def test_nan_is_not_json(api, world):
    response = api.post(
        "/contacts/upsert",
        raw='{"email": "a@example.com", "fields": {"n": NaN}}',
        key=world.keys["project"],
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def test_timestamps_are_utc_with_z(api, world):
    data = api.get("/project", key=world.keys["project"]).json()["data"]
    assert data["created_at"].endswith("Z")


@pytest.mark.parametrize("accept", ["", "*/*", "application/json", "application/*"])
def test_json_is_answered_to_any_accept_that_takes_it(api, world, accept):
    response = api.get("/project", key=world.keys["project"], HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_an_accept_header_without_json_is_406_in_the_envelope(api, world):
    response = api.get("/project", key=world.keys["project"], HTTP_ACCEPT="application/xml")
    assert response.status_code == 406
    assert json.loads(response.content)["error"]["code"] == "not_acceptable"
