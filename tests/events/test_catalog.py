"""The event catalog: schema hints, personal-data flags, redaction, and GET /event-types."""

import datetime as dt
import json

import pytest

from events.models import EventType
from events.shapes import (
    Observation,
    merge_types,
    name_looks_personal,
    redact,
    schema_hint,
    value_looks_personal,
)
from messaging.services.delivery import emails_deliver_batch
from tests.events.conftest import drain
from tests.messaging.smtp_server import smtp_server_for

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def hint(*payloads):
    seen = Observation()
    for payload in payloads:
        seen.add(payload)
    return json.loads(schema_hint(merge_types({}, seen.types))), seen.pii


def test_schema_hint_is_a_flat_type_map_with_dotted_paths_and_array_element_types():
    types, _ = hint(
        {
            "order_id": "o-1",
            "total": 10,
            "paid": True,
            "note": None,
            "items": [{"sku": "a", "qty": 1}],
            "tags": [],
            "address": {"city": "Oslo", "geo": {"lat": 1.5}},
        }
    )
    assert types == {
        "order_id": "string",
        "total": "number",
        "paid": "boolean",
        "note": "null",
        "items": "array<object>",
        "items[].sku": "string",
        "items[].qty": "number",
        "tags": "array<unknown>",
        "address": "object",
        "address.city": "string",
        "address.geo": "object",
        "address.geo.lat": "number",
    }


def test_types_seen_differently_across_events_merge_into_a_union():
    types, _ = hint({"total": 1, "tags": ["a"]}, {"total": "1", "tags": [2]}, {"total": None})
    assert types == {"total": "string|number|null", "tags": "array<string|number>"}


@pytest.mark.parametrize(
    "name",
    [
        "email",
        "userEmail",
        "phone_number",
        "mobile",
        "shipping_address",
        "first_name",
        "lastName",
        "name",
        "ip",
        "ip_address",
        "card_number",
        "zip",
        "dob",
    ],
)
def test_personal_field_names_are_flagged(name):
    assert name_looks_personal(name)


@pytest.mark.parametrize("name", ["order_id", "total", "product_name", "sku", "plan", "tipping"])
def test_ordinary_field_names_are_not_flagged(name):
    assert not name_looks_personal(name)


@pytest.mark.parametrize(
    "name",
    ["email_id", "emailId", "user_id", "phone_ids", "address_uuid", "ip_id", "card_id", "id"],
)
def test_ids_of_records_are_not_personal_data(name):
    assert not name_looks_personal(name)


@pytest.mark.parametrize("name", ["passport_id", "national_id", "tax_id", "ssn", "email"])
def test_a_person_s_own_document_number_stays_personal(name):
    assert name_looks_personal(name)


def test_an_id_field_holding_a_personal_value_is_still_flagged():
    _, pii = hint({"user_id": "ada@example.com", "email_id": "3f0c", "order_id": "o-1"})
    assert pii == {"user_id"}


@pytest.mark.parametrize(
    "value",
    [
        "ada@example.com",
        "+44 20 7946 0958",
        "(555) 123-4567",
        "192.168.0.1",
        "2001:db8::1",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        4111111111111111,
    ],
)
def test_personal_values_are_flagged(value):
    assert value_looks_personal(value)


@pytest.mark.parametrize(
    "value",
    ["hello", "2026-01-01", "4111 1111 1111 1112", 12345, "v1.2.3", "a@b", True, 3.5],
)
def test_ordinary_values_are_not_flagged(value):
    assert not value_looks_personal(value)


def test_pii_is_found_by_name_or_by_value_anywhere_in_the_payload():
    _, pii = hint({"contact": {"work": "ada@example.com"}, "items": [{"ip": "x"}], "sku": "a"})
    assert pii == {"contact.work", "items[].ip"}


def test_redaction_keeps_the_shape_and_none_of_the_data():
    redacted = redact(
        {"email": "ada@example.com", "n": 5, "ok": True, "x": None, "items": [{"a": "secret"}] * 5}
    )
    assert redacted == {
        "email": "<string>",
        "n": "<number>",
        "ok": "<boolean>",
        "x": None,
        "items": [{"a": "<string>"}] * 3,
    }


def test_catalog_fields_are_bounded():
    types, _ = hint({f"f{i}": i for i in range(1000)})
    assert len(types) == 300


# --- GET /event-types ---


def entry(project, name, source="customer", minutes=0, **fields):
    return EventType.objects.create(
        project=project,
        event=name,
        source=source,
        first_seen_at=T0,
        last_seen_at=T0,
        created_at=T0 + dt.timedelta(minutes=minutes),
        **fields,
    )


@pytest.mark.django_db
def test_event_types_lists_the_catalog_without_example_payloads(api, world):
    entry(
        world.project,
        "order.completed",
        field_types={"total": ["number"], "email": ["string"]},
        contains_pii=True,
        example_payload={"email": "<string>"},
        occurrences_count=7,
    )
    entry(world.other_project, "elsewhere")
    response = api.get("/event-types", key=world.keys["project"])
    assert response.status_code == 200
    body = response.json()
    assert body["metadata"] == {
        "total": 1,
        "items": 1,
        "limit": 20,
        "after": None,
        "next": None,
        "has_more": False,
    }
    (item,) = body["data"]
    assert set(item) == {
        "id",
        "event",
        "source",
        "schema_hint",
        "contains_pii",
        "first_seen_at",
        "last_seen_at",
        "occurrences_count",
    }
    assert item["event"] == "order.completed"
    assert json.loads(item["schema_hint"]) == {"email": "string", "total": "number"}
    assert item["contains_pii"] is True
    assert item["occurrences_count"] == 7
    assert item["first_seen_at"] == "2026-01-01T00:00:00Z"


@pytest.mark.django_db
def test_event_types_pages_with_a_cursor_and_filters(api, world, django_assert_num_queries):
    for i, (name, source) in enumerate(
        [
            ("order.completed", "customer"),
            ("Order_Refunded".lower(), "customer"),
            ("sendrealm.contact.created", "system"),
            ("signed_in", "customer"),
        ]
    ):
        entry(world.project, name, source, minutes=i)
    key = world.keys["project"]
    first = api.get("/event-types", {"limit": 2}, key=key).json()
    assert [e["event"] for e in first["data"]] == ["order.completed", "order_refunded"]
    assert first["metadata"]["has_more"] is True
    second = api.get("/event-types", {"limit": 2, "after": first["metadata"]["next"]}, key=key)
    data = second.json()
    assert [e["event"] for e in data["data"]] == ["sendrealm.contact.created", "signed_in"]
    assert data["metadata"]["after"] == first["metadata"]["next"]
    assert data["metadata"]["next"] is None

    search = api.get("/event-types", {"search": "ORDER"}, key=key).json()
    assert {e["event"] for e in search["data"]} == {"order.completed", "order_refunded"}
    assert search["metadata"]["total"] == 2
    system = api.get("/event-types", {"source": "system"}, key=key).json()
    assert [e["event"] for e in system["data"]] == ["sendrealm.contact.created"]
    with django_assert_num_queries(2):  # count and page; keys and project are cached
        api.get("/event-types", {"source": "customer"}, key=key)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"source": "partner"}, "source"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"after": "tampered"}, "after"),
        ({"search": "a\x00b"}, "search"),
    ],
)
def test_event_types_rejects_bad_parameters(api, world, params, path):
    response = api.get("/event-types", params, key=world.keys["project"])
    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["path"] == path


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("key", "with_header", "status"),
    [
        ("read_only", False, 200),
        ("sending", False, 403),
        ("personal_viewer", True, 200),
        ("personal_owner", True, 200),
        ("personal_owner", False, 400),
        ("personal_outsider", True, 403),
    ],
)
def test_event_types_needs_resources_read(api, world, key, with_header, status):
    project = world.project.id if with_header else None
    assert api.get("/event-types", key=world.keys[key], project=project).status_code == status


# --- personal data flags, through the API ---


@pytest.fixture
def smtp(settings):
    yield from smtp_server_for(settings)


def catalog(api, key, **params):
    response = api.get("/event-types", params, key=key)
    assert response.status_code == 200, response.content
    return {item["event"]: item for item in response.json()["data"]}


@pytest.mark.django_db
def test_events_naming_records_by_id_are_not_flagged_and_personal_fields_still_are(api, world):
    key = world.keys["project"]
    ids = {"email_id": "6f1c2a3e-0000-4000-8000-000000000001", "user_id": "u-1", "n": 2}
    personal = {"email": "ada@example.com", "phone": "+44 20 7946 0958", "order_id": "o-1"}
    for name, payload in (("email.opened", ids), ("profile.changed", personal)):
        body = {"event": name, "email": "ada@example.com", "payload": payload}
        assert api.post("/events", body, key=key).status_code == 202

    drain()

    entries = catalog(api, key, source="customer")
    assert entries["email.opened"]["contains_pii"] is False
    assert entries["profile.changed"]["contains_pii"] is True
    stored = EventType.objects.get(event="profile.changed")
    assert stored.pii_fields == ["email", "phone"]


@pytest.mark.django_db
def test_the_mail_send_system_event_is_not_flagged(api, world, smtp):
    body = {"from": "team@example.com", "to": "ada@example.net", "subject": "Hi", "text": "x"}
    assert api.post("/emails", body, key=world.keys["project"]).status_code == 201
    assert emails_deliver_batch() == 1

    drain()

    entries = catalog(api, world.keys["project"], source="system")
    assert entries["sendrealm.mail.send"]["contains_pii"] is False
    assert EventType.objects.get(event="sendrealm.mail.send").pii_fields == []


@pytest.mark.django_db
def test_an_id_flagged_before_ids_were_exempt_is_unflagged_by_the_next_event(api, world):
    key = world.keys["project"]
    entry(
        world.project,
        "email.opened",
        contains_pii=True,
        pii_fields=["email_id", "work_address"],
    )
    body = {"event": "email.opened", "email": "ada@example.com", "payload": {"email_id": "e-1"}}
    assert api.post("/events", body, key=key).status_code == 202

    drain()

    stored = EventType.objects.get(event="email.opened")
    assert stored.pii_fields == ["work_address"]
    assert catalog(api, key)["email.opened"]["contains_pii"] is True
