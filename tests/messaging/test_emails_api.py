"""Sending over HTTP: `POST /emails`, `GET /emails`, `GET /emails/{id}`, template tests."""

import datetime as dt
import uuid

import pytest

from messaging.hooks import register_push_test_sender, unregister_push_test_sender
from messaging.models import Email, EmailDelivery, EmailKey, EmailStatus
from tests.contacts.factories import ContactFactory
from tests.factories import ProjectFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db

EMAIL_MEMBERS = {
    "id",
    "from",
    "to",
    "subject",
    "status",
    "template_id",
    "template_version_id",
    "tags",
    "created_at",
    "sent_at",
    "delivered_at",
    "opened_at",
    "clicked_at",
    "bounced_at",
    "last_error",
}


def inline(**overrides):
    body = {
        "from": "Sendrealm <hello@example.com>",
        "to": "ada@example.net",
        "subject": "Welcome",
        "html": "<p>Hello</p>",
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not None}


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == status
    assert body["error"]["code"] == code
    return body["error"]


def paths(error: dict) -> list[str]:
    return [issue["path"] for issue in error["issues"]]


def test_sending_inline_content_answers_201_with_a_queued_email(api, world):
    response = api.post("/emails", inline(tags=["welcome"]), key=world.keys["project"])

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert set(data) == EMAIL_MEMBERS
    assert data["status"] == "queued"
    assert data["from"] == "Sendrealm <hello@example.com>"
    assert data["to"] == ["ada@example.net"]
    assert data["tags"] == ["welcome"]
    assert data["created_at"].endswith("Z")
    assert data["sent_at"] is None
    assert data["template_id"] is None
    email = Email.objects.get(pk=data["id"])
    assert email.message_id.startswith("<")
    assert email.message_id.endswith("@example.com>")
    assert EmailDelivery.objects.filter(email=email).exists()


def test_an_email_can_be_read_back_and_listed(api, world):
    created = api.post("/emails", inline(), key=world.keys["project"]).json()["data"]

    one = api.get(f"/emails/{created['id']}", key=world.keys["read_only"])
    listed = api.get("/emails", key=world.keys["read_only"])

    assert one.status_code == 200
    assert one.json()["data"] == created
    assert listed.status_code == 200
    assert [item["id"] for item in listed.json()["data"]] == [created["id"]]
    assert listed.json()["metadata"]["total"] == 1


def test_an_email_of_another_project_is_not_found(api, world):
    created = api.post("/emails", inline(), key=world.keys["project"]).json()["data"]

    assert_error(
        api.get(f"/emails/{created['id']}", key=world.keys["other_project"]), 404, "not_found"
    )


def test_a_list_of_recipients_goes_into_one_email(api, world):
    response = api.post(
        "/emails",
        inline(to=["ada@example.net", "Bob <bob@example.net>"]),
        key=world.keys["project"],
    )

    assert response.json()["data"]["to"] == ["ada@example.net", "Bob <bob@example.net>"]
    assert Email.objects.get().recipients == ["ada@example.net", "Bob <bob@example.net>"]


def test_an_invalid_recipient_is_reported_at_its_index_and_nothing_is_stored(api, world):
    response = api.post(
        "/emails", inline(to=["ada@example.net", "not-an-address"]), key=world.keys["project"]
    )

    error = assert_error(response, 400, "validation_error")
    assert paths(error) == ["to.1"]
    assert not Email.objects.exists()


def test_more_than_fifty_recipients_are_refused(api, world):
    to = [f"user{n}@example.net" for n in range(51)]

    error = assert_error(
        api.post("/emails", inline(to=to), key=world.keys["project"]), 400, "validation_error"
    )
    assert paths(error) == ["to"]


def test_the_sender_falls_back_to_the_project_default(api, world):
    world.project.default_from = "Team <team@example.com>"
    world.project.save()

    response = api.post("/emails", inline(**{"from": None}), key=world.keys["project"])

    assert response.status_code == 201
    assert response.json()["data"]["from"] == "Team <team@example.com>"


def test_without_any_sender_the_error_is_at_from(api, world):
    error = assert_error(
        api.post("/emails", inline(**{"from": None}), key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert paths(error) == ["from"]
    assert not Email.objects.exists()


def test_inline_content_needs_a_subject_and_a_body(api, world):
    no_subject = api.post("/emails", inline(subject=None), key=world.keys["project"])
    no_body = api.post("/emails", inline(html=None), key=world.keys["project"])

    assert paths(assert_error(no_subject, 400, "validation_error")) == ["subject"]
    assert paths(assert_error(no_body, 400, "validation_error")) == ["html"]


def test_unknown_members_and_wrong_types_are_refused(api, world):
    error = assert_error(
        api.post("/emails", inline(cc="x@example.net", tags="a"), key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert set(paths(error)) == {"cc", "tags"}


def test_a_template_send_renders_the_published_version(api, world):
    template = MessageTemplateFactory(project=world.project, from_email="News <news@example.com>")
    version = TemplateVersionFactory(
        template=template,
        published=True,
        subject="Hi {{ data.name }}",
        html="<p>{{ data.name }}</p>",
    )

    response = api.post(
        "/emails",
        {"to": "ada@example.net", "template_id": str(template.id), "data": {"name": "Ada"}},
        key=world.keys["project"],
    )

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["subject"] == "Hi Ada"
    assert data["from"] == "News <news@example.com>"
    assert data["template_id"] == str(template.id)
    assert data["template_version_id"] == str(version.id)
    assert Email.objects.get().html == "<p>Ada</p>"


def test_a_template_send_with_a_contact_renders_its_fields(api, world):
    contact = ContactFactory(
        project=world.project, email="ada@example.net", fields={"first_name": "Ada"}
    )
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template, published=True)

    response = api.post(
        "/emails",
        {"template_id": str(template.id), "contact_id": str(contact.id)},
        key=world.keys["project"],
    )

    assert response.status_code == 201, response.content
    assert response.json()["data"]["to"] == ["ada@example.net"]
    assert response.json()["data"]["subject"] == "Hello Ada"


def test_an_unpublished_template_cannot_be_sent(api, world):
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template)

    response = api.post(
        "/emails",
        {"to": "ada@example.net", "template_id": str(template.id)},
        key=world.keys["project"],
    )

    assert paths(assert_error(response, 409, "conflict")) == ["template_id"]
    assert not Email.objects.exists()


@pytest.mark.parametrize("kind", ["unknown", "deleted", "foreign"])
def test_an_unknown_template_is_reported_at_template_id(api, world, kind):
    if kind == "unknown":
        template_id = "00000000-0000-0000-0000-000000000000"
    else:
        project = world.project if kind == "deleted" else ProjectFactory()
        template = MessageTemplateFactory(project=project, deleted=kind == "deleted")
        TemplateVersionFactory(template=template, published=True)
        template_id = str(template.id)

    response = api.post(
        "/emails",
        {"to": "ada@example.net", "template_id": template_id, "from": "a@example.com"},
        key=world.keys["project"],
    )

    assert paths(assert_error(response, 400, "validation_error")) == ["template_id"]


def test_suppressed_recipients_are_dropped_from_the_message(api, world):
    SuppressionFactory(project=world.project, email="bob@example.net")

    response = api.post(
        "/emails", inline(to=["ada@example.net", "Bob@Example.net"]), key=world.keys["project"]
    )

    assert response.json()["data"]["status"] == "queued"
    assert Email.objects.get().recipients == ["ada@example.net"]


def test_an_email_with_only_suppressed_recipients_is_not_sent(api, world):
    SuppressionFactory(project=world.project, email="ada@example.net")

    response = api.post("/emails", inline(), key=world.keys["project"])

    assert response.status_code == 201
    assert response.json()["data"]["status"] == "suppressed"
    assert not EmailDelivery.objects.exists()


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("project", 201),
        ("sending", 201),
        ("team", 201),
        ("personal_member", 201),
        ("read_only", 403),
        ("personal_viewer", 403),
    ],
)
def test_sending_needs_send_access(api, world, persona, status):
    project = world.project.id if persona.startswith("personal") else None

    response = api.post("/emails", inline(), key=world.keys[persona], project=project)

    assert response.status_code == status, response.content


def test_a_repeated_idempotency_key_returns_the_first_email(api, world):
    headers = {"Idempotency-Key": "order-1"}
    first = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    again = api.post("/emails", inline(), key=world.keys["project"], headers=headers)

    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["data"] == first.json()["data"]
    assert Email.objects.count() == 1


def test_an_idempotency_key_with_another_body_is_a_conflict(api, world):
    headers = {"Idempotency-Key": "order-1"}
    api.post("/emails", inline(), key=world.keys["project"], headers=headers)

    response = api.post(
        "/emails", inline(subject="Other"), key=world.keys["project"], headers=headers
    )

    assert_error(response, 409, "idempotency_conflict")
    assert Email.objects.count() == 1


def test_an_idempotency_key_expires_after_a_day(api, world, clock):
    headers = {"Idempotency-Key": "order-1"}
    first = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    clock.advance(hours=24, seconds=1)

    again = api.post("/emails", inline(), key=world.keys["project"], headers=headers)

    assert again.status_code == 201
    assert again.json()["data"]["id"] != first.json()["data"]["id"]


def test_an_idempotency_key_holds_across_a_month_boundary(api, world, clock):
    # The emails table is partitioned by month: the key's own table keeps it unique.
    clock.set(dt.datetime(2026, 10, 31, 23, 59, tzinfo=dt.UTC))
    headers = {"Idempotency-Key": "order-1"}
    first = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    clock.advance(minutes=2)

    again = api.post("/emails", inline(), key=world.keys["project"], headers=headers)

    assert again.status_code == 200
    assert again.json()["data"]["id"] == first.json()["data"]["id"]
    assert EmailKey.objects.get().email_id == uuid.UUID(first.json()["data"]["id"])


def test_an_expired_idempotency_key_names_the_new_email(api, world, clock):
    headers = {"Idempotency-Key": "order-1"}
    api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    clock.advance(hours=24, seconds=1)

    again = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    replay = api.post("/emails", inline(), key=world.keys["project"], headers=headers)

    assert replay.status_code == 200
    assert replay.json()["data"]["id"] == again.json()["data"]["id"]
    assert EmailKey.objects.get().email_id == uuid.UUID(again.json()["data"]["id"])
    assert Email.objects.count() == 2


def test_idempotency_keys_are_per_project(api, world):
    headers = {"Idempotency-Key": "order-1"}
    one = api.post("/emails", inline(), key=world.keys["project"], headers=headers)
    two = api.post("/emails", inline(), key=world.keys["other_project"], headers=headers)

    assert one.status_code == two.status_code == 201


def test_a_template_test_send_uses_the_draft(api, world):
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template, published=True, subject="Published")
    TemplateVersionFactory(template=template, subject="Draft {{ data.x }}")

    response = api.post(
        f"/templates/{template.id}/test",
        {"to": "ada@example.net", "data": {"x": "1"}},
        key=world.keys["sending"],
    )

    assert response.status_code == 202, response.content
    email = Email.objects.get(pk=response.json()["data"]["email_id"])
    assert email.subject == "Draft 1"
    assert email.status == EmailStatus.QUEUED


def test_a_push_template_test_send_is_a_conflict_without_push_sending(api, world):
    template = MessageTemplateFactory(project=world.project, channel="push")
    TemplateVersionFactory(template=template, push=True)
    sender = "pushproviders.services.testsends.push_template_test_send"
    unregister_push_test_sender(sender)
    try:
        response = api.post(
            f"/templates/{template.id}/test",
            {"installation_id": "00000000-0000-0000-0000-000000000001"},
            key=world.keys["project"],
        )
    finally:
        register_push_test_sender(sender)

    assert_error(response, 409, "conflict")


def test_a_template_test_send_needs_send_access(api, world):
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template)

    response = api.post(
        f"/templates/{template.id}/test", {"to": "a@example.net"}, key=world.keys["read_only"]
    )

    assert_error(response, 403, "forbidden")


def test_tracking_policies_are_project_policies(api, world):
    response = api.patch(
        "/project", {"policies": {"track_opens": False}}, key=world.keys["project"]
    )

    assert response.status_code == 200, response.content
    policies = response.json()["data"]["policies"]
    assert policies["track_opens"] is False
    assert policies["track_clicks"] is True


@pytest.mark.parametrize("whose", ["unknown", "foreign"])
def test_a_template_test_of_an_unknown_or_foreign_template_is_404(api, world, whose):
    foreign = MessageTemplateFactory(project=world.foreign_project, from_email="n@example.com")
    TemplateVersionFactory(template=foreign)
    template_id = foreign.id if whose == "foreign" else "00000000-0000-0000-0000-000000000009"

    response = api.post(
        f"/templates/{template_id}/test", {"to": "a@example.net"}, key=world.keys["project"]
    )

    error = assert_error(response, 404, "not_found")
    assert error["issues"] == []
    assert not Email.objects.exists()


@pytest.mark.parametrize(
    ("to", "code"),
    [("not an address", "invalid_email"), ("Ada <ada@>", "invalid_email"), (["a@b.co"], "invalid")],
)
def test_a_template_test_to_a_bad_address_is_reported_at_to(api, world, to, code):
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template)

    response = api.post(f"/templates/{template.id}/test", {"to": to}, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert paths(error) == ["to"]
    assert error["issues"][0]["code"] == code
    assert not Email.objects.exists()
