import uuid

import pytest

from contacts.audiences.models import Audience, AudienceMembership, AudienceProperty
from events.models import Event
from tenancy.models import EmailNormalization
from tests.contacts.audiences.factories import (
    AudienceFactory,
    AudienceMembershipFactory,
    AudiencePropertyFactory,
)
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def audience(world):
    audience = AudienceFactory(project=world.project, name="Customers")
    AudiencePropertyFactory(audience=audience, key="plan", type="string")
    AudiencePropertyFactory(audience=audience, key="seats", type="number")
    AudiencePropertyFactory(audience=audience, key="trial", type="boolean")
    AudiencePropertyFactory(audience=audience, key="renews_on", type="date")
    return audience


# --- audiences ------------------------------------------------------------------------------


def test_create_an_audience_is_201_with_optional_fields_as_null(api, world):
    response = api.post("/audiences", {"name": "Beta testers"}, key=world.keys["project"])
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["name"] == "Beta testers"
    assert data["description"] is None
    assert data["properties"] == []
    assert set(data) == {"id", "name", "description", "properties", "created_at", "updated_at"}


def test_audience_names_are_unique_in_a_project_in_any_case(api, world):
    AudienceFactory(project=world.project, name="Customers")
    error = assert_error(
        api.post("/audiences", {"name": "CUSTOMERS"}, key=world.keys["project"]), 409, "conflict"
    )
    assert error["issues"][0]["path"] == "name"
    other = api.post("/audiences", {"name": "Customers"}, key=world.keys["other_project"])
    assert other.status_code == 201


def test_list_audiences_with_their_properties_in_constant_queries(
    api, world, audience, django_assert_num_queries
):
    for _ in range(5):
        AudiencePropertyFactory(audience=AudienceFactory(project=world.project))
    AudienceFactory(project=world.other_project)
    api.get("/audiences", key=world.keys["project"])
    with django_assert_num_queries(3):
        response = api.get("/audiences", key=world.keys["project"])
    body = response.json()
    assert body["metadata"]["total"] == 6
    assert [p["key"] for p in body["data"][0]["properties"]] == [
        "plan",
        "seats",
        "trial",
        "renews_on",
    ]


def test_get_patch_and_delete_an_audience(api, world, audience):
    url = f"/audiences/{audience.id}"
    assert api.get(url, key=world.keys["project"]).json()["data"]["name"] == "Customers"
    patched = api.patch(url, {"description": "Paying"}, key=world.keys["project"])
    assert patched.status_code == 200
    assert patched.json()["data"]["description"] == "Paying"
    AudienceMembershipFactory(audience=audience)
    deleted = api.delete(url, key=world.keys["project"])
    assert deleted.status_code == 200
    assert deleted.json()["data"]["id"] == str(audience.id)
    assert len(deleted.json()["data"]["properties"]) == 4
    assert not Audience.objects.filter(id=audience.id).exists()
    assert not AudienceMembership.objects.exists()
    assert not Event.objects.filter(event="sendrealm.audience.left").exists()
    assert_error(api.get(url, key=world.keys["project"]), 404, "not_found")


def test_patch_an_audience_to_a_taken_name_is_409(api, world, audience):
    other = AudienceFactory(project=world.project, name="Leads")
    assert_error(
        api.patch(f"/audiences/{other.id}", {"name": "customers"}, key=world.keys["project"]),
        409,
        "conflict",
    )
    other.refresh_from_db()
    assert other.name == "Leads"


def test_an_audience_of_another_project_is_404_everywhere(api, world):
    foreign = AudienceFactory(project=world.other_project)
    contact = ContactFactory(project=world.project)
    key = world.keys["project"]
    base = f"/audiences/{foreign.id}"
    assert_error(api.get(base, key=key), 404, "not_found")
    assert_error(api.patch(base, {"name": "x"}, key=key), 404, "not_found")
    assert_error(api.delete(base, key=key), 404, "not_found")
    assert_error(api.get(f"{base}/properties", key=key), 404, "not_found")
    assert_error(
        api.post(f"{base}/properties", {"key": "a", "type": "string"}, key=key), 404, "not_found"
    )
    assert_error(api.get(f"{base}/members", key=key), 404, "not_found")
    assert_error(
        api.post(f"{base}/members", {"contact_id": str(contact.id)}, key=key), 404, "not_found"
    )
    assert_error(api.delete(f"{base}/members/{contact.id}", key=key), 404, "not_found")
    assert Audience.objects.get(id=foreign.id).name == foreign.name


@pytest.mark.parametrize(
    ("persona", "can_read", "can_write"),
    [
        ("project", True, True),
        ("personal_owner", True, True),
        ("personal_viewer", True, False),
        ("read_only", True, False),
        ("sending", False, False),
    ],
)
def test_permission_matrix(api, world, audience, persona, can_read, can_write):
    contact = ContactFactory(project=world.project)
    project = world.project.id if persona.startswith("personal") else None
    kw = {"key": world.keys[persona], "project": project}
    for path in ("/audiences", f"/audiences/{audience.id}", f"/audiences/{audience.id}/members"):
        response = api.get(path, **kw)
        assert response.status_code == (200 if can_read else 403)
    writes = [
        api.post("/audiences", {"name": "New"}, **kw),
        api.post(f"/audiences/{audience.id}/properties", {"key": "x", "type": "string"}, **kw),
        api.post(f"/audiences/{audience.id}/members", {"contact_id": str(contact.id)}, **kw),
    ]
    for response in writes:
        if can_write:
            assert response.status_code == 201
        else:
            assert_error(response, 403, "forbidden")
    if not can_write:
        assert Audience.objects.count() == 1
        assert AudienceMembership.objects.count() == 0


# --- properties ---------------------------------------------------------------------------


def test_create_and_list_properties(api, world):
    audience = AudienceFactory(project=world.project)
    url = f"/audiences/{audience.id}/properties"
    response = api.post(
        url,
        {"key": "joined_on", "type": "date", "description": "First day"},
        key=world.keys["project"],
    )
    assert response.status_code == 201
    data = response.json()["data"]
    assert (data["key"], data["type"], data["audience_id"]) == (
        "joined_on",
        "date",
        str(audience.id),
    )
    listed = api.get(url, key=world.keys["project"]).json()
    assert [p["key"] for p in listed["data"]] == ["joined_on"]
    assert listed["metadata"]["total"] == 1


@pytest.mark.parametrize(
    ("body", "status", "path"),
    [
        ({"key": "x", "type": "money"}, 400, "type"),
        ({"key": "1x", "type": "string"}, 400, "key"),
        ({"key": "x"}, 400, "type"),
        ({"key": "plan", "type": "number"}, 409, "key"),
    ],
)
def test_bad_properties_are_rejected(api, world, audience, body, status, path):
    response = api.post(f"/audiences/{audience.id}/properties", body, key=world.keys["project"])
    assert response.status_code == status
    assert path in [issue["path"] for issue in response.json()["error"]["issues"]]
    assert AudienceProperty.objects.filter(audience=audience).count() == 4


# --- members ------------------------------------------------------------------------------


def test_add_a_member_with_typed_property_values(api, world, audience):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    response = api.post(
        f"/audiences/{audience.id}/members",
        {
            "email": "ADA@example.com",
            "properties": {
                "plan": "pro",
                "seats": 3,
                "trial": False,
                "renews_on": "2026-03-01",
            },
        },
        key=world.keys["project"],
    )
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["created"] is True
    assert data["contact_id"] == str(contact.id)
    assert data["contact"]["email"] == "ada@example.com"
    assert data["properties"] == {
        "plan": "pro",
        "seats": 3,
        "trial": False,
        "renews_on": "2026-03-01",
    }
    [event] = Event.objects.filter(event="sendrealm.audience.entered")
    assert event.source == "system"
    assert event.contact_id == contact.id
    assert event.payload["audience_id"] == str(audience.id)


def test_adding_an_existing_member_merges_values_with_200_and_no_event(api, world, audience):
    membership = AudienceMembershipFactory(
        audience=audience, properties={"plan": "free", "seats": 1}
    )
    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(membership.contact_id), "properties": {"plan": "pro", "seats": None}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    assert response.json()["data"]["created"] is False
    assert response.json()["data"]["properties"] == {"plan": "pro"}
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("properties", "path", "code"),
    [
        ({"plan": 3}, "properties.plan", "invalid_value"),
        ({"seats": "3"}, "properties.seats", "invalid_value"),
        ({"seats": True}, "properties.seats", "invalid_value"),
        ({"trial": "yes"}, "properties.trial", "invalid_value"),
        ({"renews_on": "tomorrow"}, "properties.renews_on", "invalid_value"),
        ({"renews_on": "2026-02-30"}, "properties.renews_on", "invalid_value"),
        ({"renews_on": "2026-02-01T10:00:00"}, "properties.renews_on", "invalid_value"),
        ({"colour": "red"}, "properties.colour", "unknown_property"),
    ],
)
def test_values_that_do_not_fit_their_property_are_rejected(
    api, world, audience, properties, path, code
):
    contact = ContactFactory(project=world.project)
    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(contact.id), "properties": {"plan": "ok", **properties}},
        key=world.keys["project"],
    )
    error = assert_error(response, 400, "validation_error")
    assert [(i["path"], i["code"]) for i in error["issues"]] == [(path, code)]
    assert not AudienceMembership.objects.exists()
    assert not Event.objects.exists()


def test_a_date_time_value_is_kept_in_utc(api, world, audience):
    contact = ContactFactory(project=world.project)
    response = api.post(
        f"/audiences/{audience.id}/members",
        {"contact_id": str(contact.id), "properties": {"renews_on": "2026-03-01T01:00:00+02:00"}},
        key=world.keys["project"],
    )
    assert response.json()["data"]["properties"]["renews_on"] == "2026-02-28T23:00:00Z"


@pytest.mark.parametrize("which", ["unknown", "deleted", "other_project", "both", "neither"])
def test_a_member_must_be_one_active_contact_of_the_project(api, world, audience, which):
    contacts = {
        "unknown": {"contact_id": str(uuid.uuid4())},
        "deleted": {"contact_id": str(ContactFactory(project=world.project, deleted=True).id)},
        "other_project": {"contact_id": str(ContactFactory(project=world.other_project).id)},
        "both": {"contact_id": str(uuid.uuid4()), "email": "a@example.com"},
        "neither": {},
    }
    response = api.post(
        f"/audiences/{audience.id}/members", contacts[which], key=world.keys["project"]
    )
    assert_error(response, 400, "validation_error")
    assert not AudienceMembership.objects.exists()


def test_list_members_with_their_contacts_in_constant_queries(
    api, world, audience, django_assert_num_queries
):
    for _ in range(10):
        AudienceMembershipFactory(audience=audience)
    AudienceMembershipFactory(audience=AudienceFactory(project=world.project))
    url = f"/audiences/{audience.id}/members"
    api.get(url, key=world.keys["project"])
    with django_assert_num_queries(3):
        response = api.get(url, {"limit": 5}, key=world.keys["project"])
    body = response.json()
    assert body["metadata"]["total"] == 10
    assert len(body["data"]) == 5
    assert body["data"][0]["contact"]["email"].endswith("@example.com")


def test_remove_a_member_answers_the_membership_and_emits_left(api, world, audience):
    membership = AudienceMembershipFactory(audience=audience, properties={"plan": "pro"})
    url = f"/audiences/{audience.id}/members/{membership.contact_id}"
    response = api.delete(url, key=world.keys["project"])
    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(membership.id)
    assert response.json()["data"]["properties"] == {"plan": "pro"}
    assert not AudienceMembership.objects.exists()
    [event] = Event.objects.filter(event="sendrealm.audience.left")
    assert (event.source, event.contact_id) == ("system", membership.contact_id)
    assert_error(api.delete(url, key=world.keys["project"]), 404, "not_found")


def test_a_member_by_email_is_found_under_the_projects_policy_and_a_bad_address_is_400(
    api, world, audience
):
    world.project.email_normalization = EmailNormalization.GMAIL
    world.project.save()
    contact = ContactFactory(project=world.project, email="jdoe@gmail.com")
    added = api.post(
        f"/audiences/{audience.id}/members",
        {"email": "J.Doe+vip@googlemail.com"},
        key=world.keys["project"],
    )
    assert added.status_code == 201
    assert added.json()["data"]["contact_id"] == str(contact.id)
    bad = api.post(
        f"/audiences/{audience.id}/members", {"email": "nope"}, key=world.keys["project"]
    )
    error = assert_error(bad, 400, "validation_error")
    assert [(i["code"], i["path"]) for i in error["issues"]] == [("invalid_email", "email")]
