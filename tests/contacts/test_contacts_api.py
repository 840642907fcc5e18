import uuid

import pytest

from contacts.audiences.models import AudienceMembership
from contacts.models import Contact
from events.models import Event
from tenancy.models import EmailNormalization
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db


def system_events(name: str, **filters: object) -> list[Event]:
    return list(Event.objects.filter(event=f"sendrealm.{name}", **filters))


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == status
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert isinstance(body["error"]["details"], str)
    return body["error"]


# --- upsert -----------------------------------------------------------------------------


def test_upsert_creates_a_contact_with_201_and_created_true(api, world):
    response = api.post(
        "/contacts/upsert",
        {"email": "  Ada@Example.COM ", "fields": {"plan": "pro"}, "external_id": "u-1"},
        key=world.keys["project"],
    )
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == 201
    data = body["data"]
    assert data["created"] is True
    assert data["email"] == "ada@example.com"
    assert data["external_id"] == "u-1"
    assert data["fields"] == {"plan": "pro"}
    assert data["deleted_at"] is None
    assert data["created_at"].endswith("Z")
    uuid.UUID(data["id"])
    [event] = system_events("contact.created")
    assert event.source == "system"
    assert str(event.contact_id) == data["id"]
    assert event.payload["contact_id"] == data["id"]


def test_upsert_of_a_known_email_in_any_case_merges_fields_with_200(api, world):
    contact = ContactFactory(
        project=world.project, email="ada@example.com", fields={"plan": "free", "age": 3}
    )
    response = api.post(
        "/contacts/upsert",
        {"email": "ADA@example.com", "fields": {"plan": "pro", "age": None, "city": "Oslo"}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["created"] is False
    assert data["id"] == str(contact.id)
    assert data["fields"] == {"plan": "pro", "city": "Oslo"}
    contact.refresh_from_db()
    assert contact.fields == {"plan": "pro", "city": "Oslo"}
    assert len(system_events("contact.updated", contact=contact, source="system")) == 1
    assert system_events("contact.created") == []


def test_an_upsert_that_changes_nothing_emits_no_event(api, world):
    ContactFactory(project=world.project, email="ada@example.com", fields={"plan": "pro"})
    response = api.post(
        "/contacts/upsert",
        {"email": "ada@example.com", "fields": {"plan": "pro", "gone": None}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    assert response.json()["data"]["created"] is False
    assert Event.objects.count() == 0


def test_upsert_under_the_gmail_policy_drops_dots_and_tags(api, world):
    world.project.email_normalization = EmailNormalization.GMAIL
    world.project.save()
    first = api.post(
        "/contacts/upsert", {"email": "J.Doe+news@GoogleMail.com"}, key=world.keys["project"]
    )
    assert first.status_code == 201
    assert first.json()["data"]["email"] == "jdoe@gmail.com"
    second = api.post("/contacts/upsert", {"email": "jdoe@gmail.com"}, key=world.keys["project"])
    assert second.status_code == 200
    assert second.json()["data"]["id"] == first.json()["data"]["id"]


def test_the_plain_policy_keeps_gmail_dots(api, world):
    response = api.post(
        "/contacts/upsert", {"email": "J.Doe+news@gmail.com"}, key=world.keys["project"]
    )
    assert response.json()["data"]["email"] == "j.doe+news@gmail.com"


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [
        ({"email": "not-an-email"}, "email", "invalid_email"),
        ({"email": 42}, "email", "invalid"),
        ({}, "email", "required"),
        ({"email": "a@example.com", "fields": ["x"]}, "fields", "not_an_object"),
        ({"email": "a@example.com", "fields": "x"}, "fields", "not_an_object"),
        ({"email": "a@example.com", "external_id": ""}, "external_id", "blank"),
        ({"email": "a@example.com", "colour": "red"}, "colour", "unknown_member"),
    ],
)
def test_upsert_rejects_bad_input_and_stores_nothing(api, world, body, path, code):
    error = assert_error(
        api.post("/contacts/upsert", body, key=world.keys["project"]), 400, "validation_error"
    )
    assert {"code": code, "path": path} in [
        {"code": i["code"], "path": i["path"]} for i in error["issues"]
    ]
    assert Contact.objects.count() == 0
    assert Event.objects.count() == 0


def test_upsert_with_an_external_id_of_another_contact_is_409_and_changes_nothing(api, world):
    ContactFactory(project=world.project, email="a@example.com", external_id="u-1")
    other = ContactFactory(project=world.project, email="b@example.com", fields={"x": 1})
    error = assert_error(
        api.post(
            "/contacts/upsert",
            {"email": "b@example.com", "external_id": "u-1", "fields": {"x": 2}},
            key=world.keys["project"],
        ),
        409,
        "conflict",
    )
    assert error["issues"][0]["path"] == "external_id"
    other.refresh_from_db()
    assert other.fields == {"x": 1}
    assert other.external_id is None
    assert Event.objects.count() == 0
    created = api.post(
        "/contacts/upsert",
        {"email": "c@example.com", "external_id": "u-1"},
        key=world.keys["project"],
    )
    assert created.status_code == 409
    assert Contact.objects.count() == 2


def test_the_same_email_in_two_projects_is_two_contacts(api, world):
    one = api.post("/contacts/upsert", {"email": "a@example.com"}, key=world.keys["project"])
    two = api.post("/contacts/upsert", {"email": "a@example.com"}, key=world.keys["other_project"])
    assert one.status_code == two.status_code == 201
    assert one.json()["data"]["id"] != two.json()["data"]["id"]


# --- lookup -----------------------------------------------------------------------------


def test_lookup_finds_the_active_contact_by_normalised_email(api, world):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    response = api.post(
        "/contacts/lookup", {"email": " ADA@example.com"}, key=world.keys["read_only"]
    )
    assert response.status_code == 200
    assert response.json() == {
        "status": 200,
        "data": {
            "id": str(contact.id),
            "email": "ada@example.com",
            "external_id": None,
            "fields": {},
            "created_at": response.json()["data"]["created_at"],
            "updated_at": response.json()["data"]["updated_at"],
            "deleted_at": None,
        },
    }


def test_lookup_under_the_gmail_policy_finds_any_spelling_of_the_address(api, world):
    world.project.email_normalization = EmailNormalization.GMAIL
    world.project.save()
    contact = ContactFactory(project=world.project, email="jdoe@gmail.com")
    response = api.post(
        "/contacts/lookup", {"email": "J.Doe+news@GoogleMail.com"}, key=world.keys["project"]
    )
    assert response.json()["data"]["id"] == str(contact.id)


def test_lookup_of_an_unknown_or_deleted_email_is_200_with_null(api, world):
    ContactFactory(project=world.project, email="gone@example.com", deleted=True)
    ContactFactory(project=world.other_project, email="elsewhere@example.com")
    for email in ("nobody@example.com", "gone@example.com", "elsewhere@example.com"):
        response = api.post("/contacts/lookup", {"email": email}, key=world.keys["project"])
        assert response.status_code == 200
        assert response.json() == {"status": 200, "data": None}


def test_lookup_by_external_id(api, world):
    contact = ContactFactory(project=world.project, external_id="u-9")
    response = api.post("/contacts/lookup", {"external_id": "u-9"}, key=world.keys["project"])
    assert response.json()["data"]["id"] == str(contact.id)


def test_lookup_needs_exactly_one_identifier_and_a_valid_email(api, world):
    assert_error(
        api.post("/contacts/lookup", {}, key=world.keys["project"]), 400, "validation_error"
    )
    assert_error(
        api.post(
            "/contacts/lookup", {"email": "a@b.co", "external_id": "x"}, key=world.keys["project"]
        ),
        400,
        "validation_error",
    )
    assert_error(
        api.post("/contacts/lookup", {"email": "nope"}, key=world.keys["project"]),
        400,
        "validation_error",
    )


# --- list and get -------------------------------------------------------------------------


def test_list_pages_through_active_contacts_of_the_project_only(
    api, world, django_assert_num_queries
):
    mine = [ContactFactory(project=world.project) for _ in range(3)]
    ContactFactory(project=world.project, deleted=True)
    ContactFactory(project=world.other_project)
    api.get("/contacts", key=world.keys["project"])  # warms the key and project cache
    with django_assert_num_queries(2):
        first = api.get("/contacts", {"limit": 2}, key=world.keys["project"])
    body = first.json()
    assert first.status_code == 200
    assert [c["id"] for c in body["data"]] == [str(c.id) for c in mine[:2]]
    assert body["metadata"]["total"] == 3
    assert body["metadata"]["has_more"] is True
    second = api.get(
        "/contacts", {"limit": 2, "after": body["metadata"]["next"]}, key=world.keys["project"]
    ).json()
    assert [c["id"] for c in second["data"]] == [str(mine[2].id)]
    assert second["metadata"]["next"] is None
    assert second["metadata"]["after"] == body["metadata"]["next"]


def test_list_query_count_does_not_grow_with_the_page(api, world, django_assert_num_queries):
    for _ in range(30):
        ContactFactory(project=world.project)
    api.get("/contacts", key=world.keys["project"])
    with django_assert_num_queries(2):
        response = api.get("/contacts", {"limit": 100}, key=world.keys["project"])
    assert len(response.json()["data"]) == 30


def test_get_returns_the_contact(api, world):
    contact = ContactFactory(project=world.project, external_id="x1", fields={"a": [1, 2]})
    response = api.get(f"/contacts/{contact.id}", key=world.keys["project"])
    assert response.status_code == 200
    assert response.json()["data"]["fields"] == {"a": [1, 2]}
    assert response.json()["data"]["external_id"] == "x1"


@pytest.mark.parametrize("key", ["other_project", "foreign", "personal_outsider"])
def test_a_contact_of_another_project_is_404(api, world, key):
    contact = ContactFactory(project=world.project)
    project = world.foreign_project.id if key == "personal_outsider" else None
    for method in ("get", "patch", "delete"):
        body = {"fields": {"a": 1}} if method == "patch" else None
        response = getattr(api, method)(
            f"/contacts/{contact.id}", body, key=world.keys[key], project=project
        )
        assert_error(response, 404, "not_found")
    contact.refresh_from_db()
    assert contact.fields == {}
    assert contact.deleted_at is None


def test_an_unknown_or_malformed_id_is_404(api, world):
    assert_error(api.get(f"/contacts/{uuid.uuid4()}", key=world.keys["project"]), 404, "not_found")
    assert_error(api.get("/contacts/not-a-uuid", key=world.keys["project"]), 404, "not_found")
    assert_error(api.get("/contacts/", key=world.keys["project"]), 404, "not_found")


# --- permission matrix ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "can_read", "can_write"),
    [
        ("project", True, True),
        ("team", True, True),
        ("personal_owner", True, True),
        ("personal_member", True, True),
        ("personal_viewer", True, False),
        ("read_only", True, False),
        ("sending", False, False),
    ],
)
def test_permission_matrix(api, world, persona, can_read, can_write):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    project = world.project.id if persona.startswith("personal") else None
    kw = {"key": world.keys[persona], "project": project}
    reads = [
        api.get("/contacts", **kw),
        api.get(f"/contacts/{contact.id}", **kw),
        api.post("/contacts/lookup", {"email": "ada@example.com"}, **kw),
    ]
    for response in reads:
        if can_read:
            assert response.status_code == 200
        else:
            assert_error(response, 403, "forbidden")
    writes = [
        api.post("/contacts/upsert", {"email": "new@example.com"}, **kw),
        api.patch(f"/contacts/{contact.id}", {"fields": {"a": 1}}, **kw),
    ]
    for response in writes:
        if can_write:
            assert response.status_code in (200, 201)
        else:
            assert_error(response, 403, "forbidden")
    deleted = api.delete(f"/contacts/{contact.id}", **kw)
    assert deleted.status_code == (200 if can_write else 403)
    if not can_write:
        assert Contact.objects.filter(project=world.project).count() == 1
        assert Event.objects.count() == 0


def test_no_key_is_401_and_a_wrong_method_405(api, world):
    assert_error(api.get("/contacts"), 401, "unauthenticated")
    assert_error(api.post("/contacts/upsert", {"email": "a@b.co"}), 401, "unauthenticated")
    assert_error(api.put("/contacts", {}, key=world.keys["project"]), 405, "method_not_allowed")
    assert_error(api.get("/contacts/upsert", key=world.keys["project"]), 405, "method_not_allowed")


# --- PATCH ---------------------------------------------------------------------------------


def test_patch_merges_fields_and_normalises_a_new_email(api, world):
    contact = ContactFactory(project=world.project, email="a@example.com", fields={"a": 1, "b": 2})
    response = api.patch(
        f"/contacts/{contact.id}",
        {"email": " New@Example.com", "fields": {"b": None, "c": 3}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["email"] == "new@example.com"
    assert data["fields"] == {"a": 1, "c": 3}
    [event] = system_events("contact.updated")
    assert event.source == "system"
    assert event.contact_id == contact.id


def test_patch_sets_and_clears_the_external_id(api, world):
    contact = ContactFactory(project=world.project)
    url = f"/contacts/{contact.id}"
    assert (
        api.patch(url, {"external_id": "u-7"}, key=world.keys["project"]).json()["data"][
            "external_id"
        ]
        == "u-7"
    )
    assert (
        api.patch(url, {"external_id": None}, key=world.keys["project"]).json()["data"][
            "external_id"
        ]
        is None
    )


def test_patch_to_an_email_taken_by_another_active_contact_is_409(api, world):
    ContactFactory(project=world.project, email="taken@example.com")
    contact = ContactFactory(project=world.project, email="mine@example.com", fields={"a": 1})
    error = assert_error(
        api.patch(
            f"/contacts/{contact.id}",
            {"email": "TAKEN@example.com", "fields": {"a": 2}},
            key=world.keys["project"],
        ),
        409,
        "conflict",
    )
    assert error["issues"][0]["path"] == "email"
    contact.refresh_from_db()
    assert (contact.email, contact.fields) == ("mine@example.com", {"a": 1})
    assert Event.objects.count() == 0


def test_patch_to_the_email_of_a_deleted_contact_is_allowed(api, world):
    ContactFactory(project=world.project, email="old@example.com", deleted=True)
    contact = ContactFactory(project=world.project)
    response = api.patch(
        f"/contacts/{contact.id}", {"email": "old@example.com"}, key=world.keys["project"]
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, ""),
        ({"email": "nope"}, "email"),
        ({"email": None}, "email"),
        ({"fields": 3}, "fields"),
        ({"fields": {"": 1}}, "fields"),
        ({"name": "x"}, "name"),
    ],
)
def test_patch_rejects_bad_input_and_changes_nothing(api, world, body, path):
    contact = ContactFactory(project=world.project, fields={"a": 1})
    error = assert_error(
        api.patch(f"/contacts/{contact.id}", body, key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert path in [issue["path"] for issue in error["issues"]]
    contact.refresh_from_db()
    assert contact.fields == {"a": 1}
    assert Event.objects.count() == 0


def test_patch_that_changes_nothing_emits_no_event(api, world):
    contact = ContactFactory(project=world.project, email="a@example.com", fields={"a": 1})
    response = api.patch(
        f"/contacts/{contact.id}",
        {"email": "A@example.com", "fields": {"a": 1}},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    assert Event.objects.count() == 0


def test_bad_json_is_400_invalid_json(api, world):
    contact = ContactFactory(project=world.project)
    assert_error(
        api.patch(f"/contacts/{contact.id}", raw="{nope", key=world.keys["project"]),
        400,
        "invalid_json",
    )


# --- DELETE --------------------------------------------------------------------------------


def test_delete_soft_deletes_frees_the_email_and_leaves_audiences(api, world):
    contact = ContactFactory(project=world.project, email="a@example.com", external_id="u-1")
    AudienceMembershipFactory(audience__project=world.project, contact=contact)
    response = api.delete(f"/contacts/{contact.id}", key=world.keys["project"])
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == str(contact.id)
    assert data["deleted_at"] is not None
    assert Contact.objects.filter(id=contact.id).exists()
    assert not AudienceMembership.objects.filter(contact=contact).exists()
    assert_error(api.get(f"/contacts/{contact.id}", key=world.keys["project"]), 404, "not_found")
    assert_error(api.delete(f"/contacts/{contact.id}", key=world.keys["project"]), 404, "not_found")
    again = api.post(
        "/contacts/upsert",
        {"email": "a@example.com", "external_id": "u-1"},
        key=world.keys["project"],
    )
    assert again.status_code == 201
    assert again.json()["data"]["id"] != str(contact.id)
    assert api.get("/contacts", key=world.keys["project"]).json()["metadata"]["total"] == 1


def test_contact_answers_are_what_the_documenting_serializer_writes(api, world):
    # The views build contacts by hand (contacts/api/serializers.py contact_data); the
    # serializer the OpenAPI document is made from must write the same members and values.
    from contacts.api.serializers import ContactSerializer
    from contacts.models import Contact

    key = world.keys["project"]
    made = api.post(
        "/contacts/upsert",
        {"email": "Same@Example.com", "fields": {"plan": "pro", "n": 1.5, "tags": ["a"]}},
        key=key,
    ).json()["data"]
    contact = Contact.objects.get(id=made["id"])
    expected = dict(ContactSerializer(contact).data)
    assert made == {**expected, "created": True}
    assert list(made)[:-1] == list(expected)
    assert api.get(f"/contacts/{contact.id}", key=key).json()["data"] == expected
    listed = api.get("/contacts", key=key).json()["data"]
    assert [row for row in listed if row["id"] == made["id"]] == [expected]
    deleted = api.delete(f"/contacts/{contact.id}", key=key).json()["data"]
    contact.refresh_from_db()
    assert deleted["deleted_at"] is not None
    assert deleted == ContactSerializer(contact).data


# The upsert takes plainly valid bodies without its serializer (contact_upsert_input); for
# any body, what it takes and what it refuses are the serializer's.
UPSERT_BODIES = [
    {"email": "ada@example.com"},
    {"email": "ada@example.com", "fields": {"plan": "pro", "n": 1.5, "tags": ["a", {"b": None}]}},
    {"email": "ada@example.com", "fields": {"plan": None}, "external_id": "u-1"},
    {"email": "ada@example.com", "fields": {}, "external_id": None},
    {"email": "  Ada@Example.COM  "},
    {"email": "not an email"},
    {"email": "Adé@exämple.com", "fields": {"nom": "Zoë", "日本": "語"}},
    {"email": "ada@example.com", "external_id": "ü-1"},
    {"email": ""},
    {"email": " "},
    {"email": None},
    {"email": 42},
    {"email": True},
    {"email": ["ada@example.com"]},
    {"email": "a" * 309 + "@example.com"},
    {"email": "a" * 308 + "@example.com"},
    {"email": "ada\x00@example.com"},
    {"email": "ada\ud800@example.com"},
    {"email": "ada@example.com", "external_id": ""},
    {"email": "ada@example.com", "external_id": " "},
    {"email": "ada@example.com", "external_id": "x" * 255},
    {"email": "ada@example.com", "external_id": "x" * 256},
    {"email": "ada@example.com", "external_id": 7},
    {"email": "ada@example.com", "external_id": "a\x00b"},
    {"email": "ada@example.com", "fields": None},
    {"email": "ada@example.com", "fields": []},
    {"email": "ada@example.com", "fields": "x"},
    {"email": "ada@example.com", "fields": {"": 1}},
    {"email": "ada@example.com", "fields": {"k" * 100: 1}},
    {"email": "ada@example.com", "fields": {"k" * 101: 1}},
    {"email": "ada@example.com", "fields": {"a": "x\x00y"}},
    {"email": "ada@example.com", "fields": {"a\x00": 1}},
    {"email": "ada@example.com", "fields": {"a": ["\ud800"]}},
    {"email": "ada@example.com", "fields": {"a": "\\u0000"}},
    {"email": "ada@example.com", "fields": {"a": float("inf")}},
    {"email": "ada@example.com", "colour": "red"},
    {"email": "ada@example.com", "colour": "red", "fields": "x"},
    {"colour": "red"},
    {},
    None,
    [],
    ["ada@example.com"],
    "ada@example.com",
]


@pytest.mark.django_db(False)
@pytest.mark.parametrize("body", UPSERT_BODIES)
def test_the_upsert_takes_and_refuses_bodies_as_its_serializer_does(body):
    from rest_framework.exceptions import ValidationError

    from contacts.api.serializers import ContactUpsertSerializer, contact_upsert_input

    serializer = ContactUpsertSerializer(data=body)
    if serializer.is_valid():
        assert contact_upsert_input(body) == dict(serializer.validated_data)
    else:
        with pytest.raises(ValidationError) as refused:
            contact_upsert_input(body)
        assert refused.value.detail == serializer.errors


@pytest.mark.django_db(False)
def test_the_upsert_members_are_its_serializers():
    from contacts.api.serializers import UPSERT_MEMBERS, ContactUpsertSerializer

    assert set(ContactUpsertSerializer().fields) == UPSERT_MEMBERS


@pytest.mark.django_db(False)
def test_a_plain_upsert_body_is_taken_without_the_serializer(monkeypatch):
    from contacts.api import serializers

    monkeypatch.setattr(serializers, "ContactUpsertSerializer", None)
    body = {"email": "ada@example.com", "fields": {"plan": "pro", "n": 1}, "external_id": "u-1"}
    assert serializers.contact_upsert_input(body) is body
