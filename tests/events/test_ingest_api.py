"""POST /events and POST /events/batch: every rule of docs/API.md, Events, and bad input."""

import datetime as dt
import json
import threading

import pytest
from django.db import connection

from events.models import Event, EventStatus
from tenancy.models import Project
from tenancy.services import project_forget

pytestmark = pytest.mark.django_db

GOOD = {"event": "order.completed", "email": "Ada@Example.com", "payload": {"total": 12.5}}


def post(api, world, body, key="project"):
    return api.post("/events", body, key=world.keys[key])


def issues(response):
    return {(i["path"], i["code"]) for i in response.json()["error"]["issues"]}


def test_a_new_event_is_accepted_with_202_and_stored_before_the_answer(api, world, clock):
    response = post(api, world, {**GOOD, "idempotency_key": "order-1"})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == 202
    data = body["data"]
    assert set(data) == {"id", "event", "idempotency_key", "status", "received_at", "duplicate"}
    assert data["event"] == "order.completed"
    assert data["status"] == "accepted"
    assert data["duplicate"] is False
    assert data["idempotency_key"] == "order-1"
    assert data["received_at"] == "2026-01-01T12:00:00Z"
    event = Event.objects.get(id=data["id"])
    assert event.status == EventStatus.ACCEPTED
    assert event.project_id == world.project.id
    assert event.email == "ada@example.com"  # normalised at ingest
    assert event.payload == {"total": 12.5}
    assert event.occurred_at == clock.current  # default: receipt time
    assert event.next_attempt_at == clock.current  # due at once


def test_a_resent_idempotency_key_returns_the_stored_event_with_200(api, world):
    first = post(api, world, {**GOOD, "idempotency_key": "k"}).json()["data"]
    again = post(api, world, {"event": "other.thing", "external_id": "x", "idempotency_key": "k"})
    assert again.status_code == 200
    data = again.json()["data"]
    assert data["id"] == first["id"]
    assert data["event"] == "order.completed"  # the stored one, whatever the new body says
    assert data["duplicate"] is True
    assert Event.objects.count() == 1


def test_idempotency_keys_are_scoped_to_the_project(api, world):
    post(api, world, {**GOOD, "idempotency_key": "k"})
    other = post(api, world, {**GOOD, "idempotency_key": "k"}, key="other_project")
    assert other.status_code == 202
    assert Event.objects.count() == 2


def test_without_an_idempotency_key_every_send_is_a_new_event(api, world):
    assert post(api, world, GOOD).status_code == 202
    assert post(api, world, GOOD).status_code == 202
    assert Event.objects.count() == 2


def test_occurred_at_with_an_offset_is_stored_in_utc(api, world):
    response = post(api, world, {**GOOD, "occurred_at": "2026-03-01T10:00:00+02:00"})
    assert response.status_code == 202
    event = Event.objects.get(id=response.json()["data"]["id"])
    assert event.occurred_at == dt.datetime(2026, 3, 1, 8, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "name",
    ["a", "order_completed", "order.completed.v2", "checkout_step_2.done", "x" * 200],
)
def test_valid_event_names_are_accepted(api, world, name):
    assert post(api, world, {**GOOD, "event": name}).status_code == 202


@pytest.mark.parametrize(
    "name",
    [
        "Order",
        "order..completed",
        "order.",
        ".order",
        "_order",
        "order_",
        "a__b",
        "a-b",
        "order completed",
        "ordér",
        "x" * 201,
        "",
    ],
)
def test_invalid_event_names_are_400_at_event(api, world, name):
    response = post(api, world, {**GOOD, "event": name})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert {path for path, _ in issues(response)} == {"event"}


@pytest.mark.parametrize("name", ["sendrealm.contact.created", "sendrealm.anything", "sendrealm."])
def test_the_reserved_prefix_is_422_reserved_event_name(api, world, name):
    response = post(api, world, {**GOOD, "event": name})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "reserved_event_name"
    assert error["issues"][0]["path"] == "event"
    assert Event.objects.count() == 0


def test_an_event_without_any_identity_is_400(api, world):
    response = post(api, world, {"event": "order.completed", "payload": {}})
    assert response.status_code == 400
    assert ("", "identity_required") in issues(response)


@pytest.mark.parametrize(
    "identity",
    [
        {"contact_id": "6b1f3c2e-0d6a-4f5e-9a51-2d7c6c1e9b10"},
        {"external_id": "user-42"},
        {"email": "x@example.com"},
    ],
)
def test_any_one_identity_is_enough(api, world, identity):
    assert post(api, world, {"event": "signed_in", **identity}).status_code == 202


def test_a_payload_over_the_project_limit_is_422_payload_too_large(api, world):
    Project.objects.filter(id=world.project.id).update(event_payload_limit_bytes=1024)
    project_forget(project=world.project)
    # Serialised compactly: {"blob":"..."} is 11 bytes plus the text.
    fits = post(api, world, {**GOOD, "payload": {"blob": "x" * (1024 - 11)}})
    assert fits.status_code == 202
    response = post(api, world, {**GOOD, "payload": {"blob": "x" * (1024 - 10)}})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "payload_too_large"
    assert "1024" in error["details"]
    # Measured in bytes, not characters.
    assert post(api, world, {**GOOD, "payload": {"blob": "é" * 600}}).status_code == 422


def test_a_body_that_is_not_json_is_400_invalid_json(api, world):
    response = api.post("/events", raw="{not json", key=world.keys["project"])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize("body", [[GOOD], "order.completed", 5, None])
def test_a_body_that_is_not_an_object_is_400(api, world, body):
    response = api.post("/events", raw=json.dumps(body), key=world.keys["project"])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"


def test_wrong_types_are_400_with_one_issue_per_member(api, world):
    response = post(
        api,
        world,
        {
            "event": 5,
            "email": ["a@b.c"],
            "contact_id": "not-a-uuid",
            "external_id": 42,
            "payload": [1, 2],
            "occurred_at": 1767225600,
            "idempotency_key": {"k": 1},
        },
    )
    assert response.status_code == 400
    assert {path for path, _ in issues(response)} == {
        "event",
        "email",
        "contact_id",
        "external_id",
        "payload",
        "occurred_at",
        "idempotency_key",
    }


def test_unknown_members_are_400_unknown_member(api, world):
    response = post(api, world, {**GOOD, "properties": {}, "userId": "x"})
    assert response.status_code == 400
    assert issues(response) == {("properties", "unknown_member"), ("userId", "unknown_member")}


def test_an_invalid_email_is_400(api, world):
    response = post(api, world, {**GOOD, "email": "not an email"})
    assert response.status_code == 400
    assert ("email", "invalid_email") in issues(response)


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "2026-01-01T12:00:00",
        "2026-01-01",
        "2026-13-01T00:00:00Z",
        "",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-05:00",
    ],
)
def test_bad_timestamps_are_400_at_occurred_at(api, world, value):
    response = post(api, world, {**GOOD, "occurred_at": value})
    assert response.status_code == 400
    assert {path for path, _ in issues(response)} == {"occurred_at"}


def test_a_timestamp_past_the_calendar_rejects_only_its_batch_item(api, world):
    response = api.post(
        "/events/batch",
        {"events": [GOOD, {**GOOD, "occurred_at": "9999-12-31T23:59:59-05:00"}]},
        key=world.keys["project"],
    )
    assert response.status_code == 202
    data = response.json()["data"]
    assert (data["accepted"], data["rejected"]) == (1, 1)
    assert data["results"][1]["error"]["issues"][0]["path"] == "events.1.occurred_at"


def test_an_idempotency_key_over_255_characters_is_400(api, world):
    assert post(api, world, {**GOOD, "idempotency_key": "k" * 255}).status_code == 202
    response = post(api, world, {**GOOD, "idempotency_key": "k" * 256})
    assert response.status_code == 400
    assert issues(response) == {("idempotency_key", "too_long")}


def test_text_the_database_cannot_store_is_400_not_500(api, world):
    nul = post(api, world, {**GOOD, "payload": {"note": "a\u0000b"}})
    assert nul.status_code == 400
    assert issues(nul) == {("payload", "invalid_characters")}
    key = post(api, world, {**GOOD, "idempotency_key": "a\u0000b"})
    assert key.status_code == 400
    surrogate = api.post(
        "/events",
        raw='{"event":"a","email":"a@b.co","payload":{"x":"\\ud800"}}',
        key=world.keys["project"],
    )
    assert surrogate.status_code == 400
    huge = api.post(
        "/events",
        raw='{"event":"a","email":"a@b.co","payload":{"x":1e999}}',
        key=world.keys["project"],
    )
    assert huge.status_code == 400


@pytest.mark.parametrize(
    ("key", "status"),
    [
        ("project", 202),
        ("sending", 202),
        ("team", 202),
        ("personal_member", 403),  # personal keys need the project header
        ("read_only", 403),
    ],
)
def test_who_may_send_events(api, world, key, status):
    response = post(api, world, GOOD, key=key)
    expected = 400 if key == "personal_member" else status
    assert response.status_code == expected


def test_personal_keys_send_with_events_write_and_the_project_header(api, world):
    member = api.post("/events", GOOD, key=world.keys["personal_member"], project=world.project.id)
    assert member.status_code == 202
    viewer = api.post("/events", GOOD, key=world.keys["personal_viewer"], project=world.project.id)
    assert viewer.status_code == 403
    assert api.post("/events", GOOD).status_code == 401


def test_get_on_events_is_405(api, world):
    assert api.get("/events", key=world.keys["project"]).status_code == 405
    assert api.post("/events/", GOOD, key=world.keys["project"]).status_code == 404


# --- batch ---


def batch(api, world, events, key="project"):
    return api.post("/events/batch", {"events": events}, key=world.keys[key])


def test_a_batch_answers_one_result_per_item_in_order_and_keeps_the_good_ones(api, world):
    post(api, world, {**GOOD, "idempotency_key": "seen"})
    response = batch(
        api,
        world,
        [
            {**GOOD, "idempotency_key": "a"},
            {"event": "Bad Name", "email": "x@example.com"},
            {**GOOD, "idempotency_key": "seen"},
            {**GOOD, "event": "sendrealm.mail.send"},
            {**GOOD},
            "not an object",
            {**GOOD, "idempotency_key": "a"},  # same key twice in one batch
        ],
    )
    assert response.status_code == 202
    data = response.json()["data"]
    statuses = [(r["index"], r["status"]) for r in data["results"]]
    assert statuses == [
        (0, "accepted"),
        (1, "rejected"),
        (2, "duplicate"),
        (3, "rejected"),
        (4, "accepted"),
        (5, "rejected"),
        (6, "duplicate"),
    ]
    assert (data["accepted"], data["duplicates"], data["rejected"]) == (2, 2, 3)
    results = data["results"]
    assert results[1]["id"] is None
    assert results[1]["error"]["code"] == "validation_error"
    assert results[1]["error"]["issues"][0]["path"] == "events.1.event"
    assert set(results[1]["error"]) == {"code", "message", "details", "issues"}
    assert results[3]["error"]["code"] == "reserved_event_name"
    assert results[5]["error"]["issues"][0]["path"] == "events.5"
    assert results[6]["id"] == results[0]["id"]
    assert results[0]["error"] is None
    assert Event.objects.count() == 3  # the earlier one and the two accepted


def test_an_oversize_item_is_rejected_alone(api, world):
    Project.objects.filter(id=world.project.id).update(event_payload_limit_bytes=1024)
    project_forget(project=world.project)
    response = batch(api, world, [{**GOOD, "payload": {"b": "x" * 2000}}, GOOD])
    results = response.json()["data"]["results"]
    assert results[0]["error"]["code"] == "payload_too_large"
    assert results[0]["error"]["issues"][0]["path"] == "events.0.payload"
    assert results[1]["status"] == "accepted"


def test_a_batch_of_500_is_accepted_and_501_is_400(api, world):
    response = batch(api, world, [{**GOOD, "idempotency_key": f"k{i}"} for i in range(500)])
    assert response.status_code == 202
    assert response.json()["data"]["accepted"] == 500
    assert Event.objects.count() == 500
    too_many = batch(api, world, [GOOD] * 501)
    assert too_many.status_code == 400
    assert issues(too_many) == {("events", "too_long")}


@pytest.mark.parametrize(
    "body",
    [{}, {"events": []}, {"events": {}}, {"events": [GOOD], "extra": 1}, [GOOD]],
)
def test_a_malformed_batch_envelope_is_400(api, world, body):
    response = api.post("/events/batch", body, key=world.keys["project"])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"


def test_a_batch_of_only_rejected_items_still_answers_202(api, world):
    response = batch(api, world, [{"event": "x"}])
    assert response.status_code == 202
    assert response.json()["data"]["rejected"] == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_sends_of_one_key_make_one_event(api, world):
    barrier = threading.Barrier(20)
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()
    key = world.keys["project"]

    def send() -> None:
        from tests.conftest import Api

        client = Api()
        try:
            barrier.wait()
            response = client.post("/events", {**GOOD, "idempotency_key": "race"}, key=key)
            with lock:
                answers.append((response.status_code, response.json()["data"]["id"]))
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 20
    assert sorted(status for status, _ in answers) == [200] * 19 + [202]
    assert len({event_id for _, event_id in answers}) == 1
    assert Event.objects.filter(idempotency_key="race").count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_with_overlapping_keys_make_one_event_per_key(api, world):
    barrier = threading.Barrier(5)
    key = world.keys["project"]
    accepted: list[int] = []

    def send() -> None:
        from tests.conftest import Api

        try:
            barrier.wait()
            body = {"events": [{**GOOD, "idempotency_key": f"k{i}"} for i in range(50)]}
            data = Api().post("/events/batch", body, key=key).json()["data"]
            accepted.append(data["accepted"])
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(accepted) == 50
    assert Event.objects.count() == 50
