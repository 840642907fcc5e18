"""Contacts' `fields` stay within the project's `contact_fields_limit_bytes`."""

import json

import pytest
from django.db import connection

from config.api.errors import PayloadTooLarge, ValidationFailed
from config.api.jsonvalues import json_size
from contacts.models import Contact
from contacts.services import contact_upsert
from events.models import Event
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error

pytestmark = pytest.mark.django_db

LIMIT = 2048


@pytest.fixture
def small_limit(world):
    world.project.contact_fields_limit_bytes = LIMIT
    world.project.save(update_fields=["contact_fields_limit_bytes"])
    return LIMIT


def size(value):
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def blob(length):
    return "é" * (length // 2)  # two bytes each in UTF-8


def test_the_default_bound_is_64_kib(api, world):
    fields = {"blob": "x" * 65_520}
    assert size(fields) <= 65536

    response = api.post(
        "/contacts/upsert", {"email": "a@example.com", "fields": fields}, key=world.keys["project"]
    )

    assert response.status_code == 201
    too_big = {"blob": "x" * 65_536}
    response = api.post(
        "/contacts/upsert", {"email": "b@example.com", "fields": too_big}, key=world.keys["project"]
    )
    assert_error(response, 422, "payload_too_large")


def test_an_upsert_creating_fields_over_the_bound_is_422_and_creates_nothing(
    api, world, small_limit
):
    fields = {"bio": blob(LIMIT)}

    response = api.post(
        "/contacts/upsert", {"email": "a@example.com", "fields": fields}, key=world.keys["project"]
    )

    error = assert_error(response, 422, "payload_too_large")
    assert [issue["path"] for issue in error["issues"]] == ["fields"]
    assert f"{size(fields)} bytes" in error["details"]
    assert str(LIMIT) in error["details"]
    assert not Contact.objects.exists()
    assert not Event.objects.exists()


def test_the_bound_is_measured_on_the_merged_fields(api, world, small_limit):
    contact = ContactFactory(
        project=world.project, email="ada@example.com", fields={"bio": blob(LIMIT - 200)}
    )
    change = {"notes": blob(400)}
    assert size(change) < LIMIT

    response = api.post(
        "/contacts/upsert",
        {"email": "ada@example.com", "fields": change},
        key=world.keys["project"],
    )

    assert_error(response, 422, "payload_too_large")
    contact.refresh_from_db()
    assert set(contact.fields) == {"bio"}, "the statement's merge was undone"
    assert not Event.objects.filter(event="sendrealm.contact.updated").exists()


def test_a_merge_that_removes_keys_may_bring_fields_back_under_the_bound(api, world, small_limit):
    ContactFactory(
        project=world.project, email="ada@example.com", fields={"bio": blob(LIMIT - 200)}
    )

    response = api.post(
        "/contacts/upsert",
        {"email": "ada@example.com", "fields": {"bio": None, "notes": blob(400)}},
        key=world.keys["project"],
    )

    assert response.status_code == 200
    assert set(response.json()["data"]["fields"]) == {"notes"}


def test_a_patch_over_the_bound_is_422_and_changes_nothing(api, world, small_limit):
    contact = ContactFactory(project=world.project, fields={"bio": blob(LIMIT - 200)})

    response = api.patch(
        f"/contacts/{contact.id}",
        {"fields": {"notes": blob(400)}, "external_id": "u-1"},
        key=world.keys["project"],
    )

    assert_error(response, 422, "payload_too_large")
    contact.refresh_from_db()
    assert set(contact.fields) == {"bio"}
    assert contact.external_id is None


def test_the_service_refuses_text_postgresql_cannot_store_at_its_path(world):
    with pytest.raises(ValidationFailed) as caught:
        contact_upsert(
            project=world.project, email="a@example.com", fields={"pets": ["ok", "x\x00"]}
        )

    assert [issue.path for issue in caught.value.issues] == ["fields.pets.1"]


def exactly(limit, base):
    """Fields that, merged into `base`, are `limit` bytes as the bound measures them."""
    change = {"notes": ""}
    change["notes"] = "x" * (limit - size(base | change))
    assert size(base | change) == limit
    return change


@pytest.mark.parametrize("over", [0, 1])
def test_a_merge_at_the_bound_is_written_and_one_byte_more_is_not(world, small_limit, over):
    # The statement's own check reads jsonb's text, which spaces its separators: a merge
    # right at the bound is over it there, and is measured exactly instead.
    base = {"bio": blob(LIMIT - 300), "n": [1, 2.5, None]}
    contact = ContactFactory(project=world.project, email="ada@example.com", fields=base)
    change = exactly(LIMIT + over, base)

    if over:
        with pytest.raises(PayloadTooLarge) as caught:
            contact_upsert(project=world.project, email="ada@example.com", fields=change)
        assert f"{LIMIT + 1} bytes" in caught.value.details
    else:
        upserted, created = contact_upsert(
            project=world.project, email="ada@example.com", fields=change
        )
        assert (upserted.fields, created) == (base | change, False)

    contact.refresh_from_db()
    assert contact.fields == (base if over else base | change)
    assert Event.objects.filter(event="sendrealm.contact.updated").count() == (0 if over else 1)


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1e-7, "b": 1.5e-300, "c": 1e16, "d": 1.5e300, "e": -0.0, "f": 0.1},
        {"big": 2**70, "neg": -(2**63), "f": 123456789.123456789, "g": 1e15 + 0.5},
        {"text": 'quotes " and \\ back\nslash\t\x01\x1f\u2028 ünïcödé 😀', "": [[], {}]},
        {"deep": {"list": [True, False, None, {"k": [1, "2", 3.0]}]}, "empty": ""},
    ],
)
def test_jsonb_text_is_never_shorter_than_the_size_the_bound_measures(value):
    # The upsert statement refuses a merge whose jsonb text is over the bound and has
    # Python measure it then: sound only while that text is never the shorter one.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (%s::jsonb)::text, octet_length((%s::jsonb)::text)",
            [json.dumps(value)] * 2,
        )
        text, length = cursor.fetchone()
    assert length >= json_size(json.loads(text))
