"""Contacts' `fields` stay within the project's `contact_fields_limit_bytes`."""

import json

import pytest

from config.api.errors import ValidationFailed
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
