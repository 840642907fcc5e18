"""Push sending over HTTP: `POST /push/send`, `POST /push/tests`, `GET /push/messages/{id}`,
`POST /push/messages/{id}/open` and push template test sends; what is stored and refused.
Delivery to the providers is tests/pushproviders/test_push_delivery.py."""

import pytest

from bench import keys
from events.models import Event
from pushproviders.models import PushDelivery, PushMessage
from tests.api.test_envelopes import assert_error
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory
from tests.pushproviders.factories import PushAppFactory, PushInstallationFactory
from tests.pushproviders.sending import push_world

pytestmark = pytest.mark.django_db

MESSAGE_MEMBERS = {
    "id",
    "template_id",
    "title",
    "body",
    "data",
    "status",
    "deliveries",
    "created_at",
    "sent_at",
}
FCM_TOKEN = "fcm-device-token-0001"


@pytest.fixture
def push(api, world):
    push = push_world(api, world)
    push.fcm()
    push.apns()
    push.webpush()
    return push


@pytest.fixture
def ada(push):
    return push.contact(first_name="Ada")


@pytest.fixture
def devices(push, ada):
    return [
        push.install(ada, "fcm", FCM_TOKEN),
        push.install(ada, "apns", keys.APNS_TOKEN),
        push.install(ada, "webpush", keys.subscription()),
    ]


def issues(response, status=400, code="validation_error"):
    error = assert_error(response, status, code)
    return [(issue["path"], issue["code"]) for issue in error["issues"]]


def nothing_stored():
    return not PushMessage.objects.exists() and not PushDelivery.objects.exists()


# --- POST /push/send ------------------------------------------------------------------------


def test_a_send_to_a_contact_queues_one_delivery_per_active_installation(push, ada, devices):
    retired = push.install(ada, "fcm", "fcm-old-device")
    retired.active = False
    retired.save(update_fields=["active"])

    response = push.send(
        {"contact_id": str(ada.id), "title": "Hi", "body": "Your order shipped", "data": {"n": 1}}
    )

    assert response.status_code == 202, response.content
    data = response.json()["data"]
    assert set(data) == MESSAGE_MEMBERS
    assert data["status"] == "queued"
    assert data["template_id"] is None
    assert (data["title"], data["body"], data["data"]) == ("Hi", "Your order shipped", {"n": "1"})
    assert data["sent_at"] is None
    assert data["deliveries"] == [
        {
            "installation_id": str(device.id),
            "status": "queued",
            "provider_message_id": None,
            "error": None,
        }
        for device in devices
    ]
    assert PushDelivery.objects.filter(status="accepted").count() == 3


def test_the_message_reads_back_as_it_was_answered(push, ada, devices):
    sent = push.send({"contact_id": str(ada.id), "body": "Hello"}).json()["data"]

    response = push.api.get(f"/push/messages/{sent['id']}", key=push.key)

    assert response.status_code == 200
    assert response.json()["data"] == sent
    assert sent["title"] is None


def test_data_values_are_sent_as_strings(push, ada, devices):
    response = push.send(
        {
            "contact_id": str(ada.id),
            "body": "b",
            "data": {"url": "https://x", "count": 2, "flag": True, "nested": {"a": [1]}},
        }
    )

    assert response.json()["data"]["data"] == {
        "url": "https://x",
        "count": "2",
        "flag": "true",
        "nested": '{"a":[1]}',
    }


def test_named_installations_are_sent_to_in_the_order_given(push, ada, devices):
    ordered = [devices[2], devices[0]]

    response = push.send({"installation_ids": [str(d.id) for d in ordered], "title": "T"})

    assert response.status_code == 202
    assert [d["installation_id"] for d in response.json()["data"]["deliveries"]] == [
        str(d.id) for d in ordered
    ]


def test_a_template_is_rendered_per_recipient_contact(push, ada, devices):
    bob = push.contact(first_name="Bob")
    bobs = push.install(bob, "fcm", "bob-device")
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(
        template=template,
        push=True,
        published=True,
        title="Hi {{ contact.fields.first_name }}",
        body="{{ data.item }} is back",
        data={"who": "{{ contact.fields.first_name }}", "n": 3},
    )

    response = push.send(
        {
            "installation_ids": [str(devices[0].id), str(bobs.id)],
            "template_id": str(template.id),
            "data": {"item": "The red coat"},
        }
    )

    assert response.status_code == 202, response.content
    data = response.json()["data"]
    assert data["template_id"] == str(template.id)
    assert (data["title"], data["body"], data["data"]) == (
        "Hi Ada",
        "The red coat is back",
        {"who": "Ada", "n": "3"},
    )
    sent = {d.contact_id: (d.title, d.data) for d in PushDelivery.objects.all()}
    assert sent == {
        ada.id: ("Hi Ada", {"who": "Ada", "n": "3"}),
        bob.id: ("Hi Bob", {"who": "Bob", "n": "3"}),
    }
    assert PushMessage.objects.get().contact_id is None


def test_the_app_is_named_by_its_public_id_too(push, ada, devices):
    response = push.send({"contact_id": str(ada.id), "body": "b", "app_id": push.app.public_id})

    assert response.status_code == 202


def test_a_sending_key_may_send_and_a_read_only_key_may_not(push, ada, devices):
    assert push.send({"contact_id": str(ada.id), "body": "b"}, key="sending").status_code == 202

    refused = push.send({"contact_id": str(ada.id), "body": "b"}, key="read_only")

    assert_error(refused, 403, "forbidden")


def test_an_unknown_app_is_a_bad_reference_and_stores_nothing(push, ada, devices):
    response = push.send({"contact_id": str(ada.id), "body": "b", "app_id": "app_0000000000000000"})

    assert issues(response) == [("app_id", "not_found")]
    assert nothing_stored()


def test_another_project_s_app_is_not_found(push, ada, devices):
    foreign = PushAppFactory(project=push.world.other_project)

    response = push.send({"contact_id": str(ada.id), "body": "b", "app_id": str(foreign.id)})

    assert issues(response) == [("app_id", "not_found")]
    assert nothing_stored()


def test_an_installation_of_another_project_or_app_is_not_found(push, ada, devices):
    foreign = PushInstallationFactory(app__project=push.world.other_project)
    other_app = PushInstallationFactory(app__project=push.world.project)

    response = push.send(
        {
            "installation_ids": [str(devices[0].id), str(foreign.id), str(other_app.id)],
            "body": "b",
        }
    )

    assert issues(response) == [
        ("installation_ids.1", "not_found"),
        ("installation_ids.2", "not_found"),
    ]
    assert nothing_stored()


def test_an_installation_listed_twice_or_inactive_is_refused(push, ada, devices):
    devices[1].active = False
    devices[1].save(update_fields=["active"])

    response = push.send(
        {
            "installation_ids": [str(devices[0].id), str(devices[1].id), str(devices[0].id)],
            "body": "b",
        }
    )

    assert issues(response) == [
        ("installation_ids.1", "inactive"),
        ("installation_ids.2", "duplicate"),
    ]
    assert nothing_stored()


def test_a_contact_without_active_installations_is_refused(push, ada, devices):
    lonely = push.contact()

    response = push.send({"contact_id": str(lonely.id), "body": "b"})

    assert issues(response) == [("contact_id", "no_installations")]
    assert nothing_stored()


def test_an_unknown_contact_is_a_bad_reference(push):
    stranger = ContactFactory(project=push.world.other_project)

    response = push.send({"contact_id": str(stranger.id), "body": "b"})

    assert issues(response) == [("contact_id", "not_found")]


def test_an_email_template_is_the_wrong_channel(push, ada, devices):
    template = MessageTemplateFactory(project=push.world.project)
    TemplateVersionFactory(template=template, published=True)

    response = push.send({"contact_id": str(ada.id), "template_id": str(template.id)})

    assert issues(response) == [("template_id", "wrong_channel")]
    assert nothing_stored()


def test_an_unpublished_template_is_a_conflict(push, ada, devices):
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(template=template, push=True)

    response = push.send({"contact_id": str(ada.id), "template_id": str(template.id)})

    assert issues(response, 409, "conflict") == [("template_id", "not_published")]
    assert nothing_stored()


def test_a_deleted_or_foreign_template_is_not_found(push, ada, devices):
    deleted = MessageTemplateFactory(project=push.world.project, channel="push", deleted=True)
    foreign = MessageTemplateFactory(project=push.world.other_project, channel="push")

    for template in (deleted, foreign):
        response = push.send({"contact_id": str(ada.id), "template_id": str(template.id)})
        assert issues(response) == [("template_id", "not_found")]


@pytest.mark.parametrize(
    "body",
    [
        {"body": "b"},
        {"contact_id": "CONTACT", "installation_ids": ["DEVICE"], "body": "b"},
        {"contact_id": "CONTACT"},
        {
            "contact_id": "CONTACT",
            "template_id": "00000000-0000-0000-0000-000000000001",
            "title": "t",
        },
        {"contact_id": "CONTACT", "title": ""},
        {"contact_id": "CONTACT", "body": "b", "data": {"big": "x" * 5000}},
        {"contact_id": "CONTACT", "body": "b", "data": ["not", "an", "object"]},
        {"contact_id": "CONTACT", "body": "b", "sound": "ping"},
        {"installation_ids": [], "body": "b"},
    ],
    ids=[
        "no-recipient",
        "two-recipients",
        "no-content",
        "template-and-title",
        "empty-title",
        "data-too-large",
        "data-not-an-object",
        "unknown-member",
        "no-installations-listed",
    ],
)
def test_a_malformed_send_is_refused_and_stores_nothing(push, ada, devices, body):
    body = {
        name: (
            str(ada.id)
            if value == "CONTACT"
            else [str(devices[0].id)]
            if value == ["DEVICE"]
            else value
        )
        for name, value in body.items()
    }

    response = push.send(body)

    assert_error(response, 400, "validation_error")
    assert nothing_stored()


# --- providers that cannot send -------------------------------------------------------------


def test_a_disabled_provider_fails_its_deliveries_at_once_and_keeps_installations_active(
    push, ada, devices
):
    provider = push.providers["apns"]
    disabled = push.api.patch(
        f"/push/providers/{provider.id}", {"status": "disabled"}, key=push.key
    )
    assert disabled.status_code == 200

    response = push.send({"contact_id": str(ada.id), "body": "b"})

    assert response.status_code == 202
    deliveries = {d["installation_id"]: d for d in response.json()["data"]["deliveries"]}
    apns = deliveries[str(devices[1].id)]
    assert apns["status"] == "failed"
    assert apns["error"] == "The app's apns provider is disabled."
    assert deliveries[str(devices[0].id)]["status"] == "queued"
    assert response.json()["data"]["status"] == "queued"
    devices[1].refresh_from_db()
    assert devices[1].active is True
    failure = Event.objects.get(event="sendrealm.push.failure")
    assert failure.payload["installation_id"] == str(devices[1].id)
    assert failure.payload["push_id"] == response.json()["data"]["id"]
    assert failure.contact_id == ada.id
    delivery = PushDelivery.objects.get(installation=devices[1])
    assert (delivery.status, delivery.error_code) == ("dead_lettered", "provider_disabled")


def test_a_message_whose_providers_all_cannot_send_is_failed_at_once(push, ada):
    device = push.install(ada, "fcm", FCM_TOKEN)
    provider = push.providers["fcm"]
    cleared = push.api.patch(
        f"/push/providers/{provider.id}", {"service_account": None}, key=push.key
    )
    assert cleared.json()["data"]["readiness"]["ready"] is False

    response = push.send({"installation_ids": [str(device.id)], "body": "b"})

    assert response.status_code == 202
    data = response.json()["data"]
    assert data["status"] == "failed"
    assert data["deliveries"][0]["error"] == (
        "The app's fcm provider is not ready: missing service_account."
    )
    device.refresh_from_db()
    assert device.active is True


def test_an_installation_whose_platform_has_no_provider_fails(api, world):
    push = push_world(api, world)
    ada = push.contact()
    device = push.install(ada, "fcm", FCM_TOKEN)

    response = push.send({"installation_ids": [str(device.id)], "body": "b"})

    assert response.json()["data"]["deliveries"][0]["error"] == "The app has no fcm provider."


# --- Idempotency-Key ------------------------------------------------------------------------


def test_a_repeated_idempotency_key_returns_the_first_message(push, ada, devices):
    body = {"contact_id": str(ada.id), "body": "b"}
    first = push.send(body, headers={"Idempotency-Key": "k-1"})

    again = push.send(body, headers={"Idempotency-Key": "k-1"})
    other = push.send({**body, "body": "c"}, headers={"Idempotency-Key": "k-1"})

    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["data"]["id"] == first.json()["data"]["id"]
    assert_error(other, 409, "idempotency_conflict")
    assert PushMessage.objects.count() == 1


# --- GET /push/messages/{id} ----------------------------------------------------------------


def test_another_project_s_message_is_not_found(push, ada, devices):
    sent = push.send({"contact_id": str(ada.id), "body": "b"}).json()["data"]

    response = push.api.get(f"/push/messages/{sent['id']}", key=push.world.keys["other_project"])

    assert_error(response, 404, "not_found")


# --- POST /push/tests -----------------------------------------------------------------------


def test_a_test_send_goes_to_one_installation_with_default_content(push, ada, devices):
    response = push.api.post(
        "/push/tests", {"installation_id": str(devices[0].id)}, key=push.world.keys["sending"]
    )

    assert response.status_code == 202, response.content
    data = response.json()["data"]
    assert (data["title"], data["body"]) == (
        "Test notification",
        "Push notifications reach this device.",
    )
    assert [d["installation_id"] for d in data["deliveries"]] == [str(devices[0].id)]
    assert PushMessage.objects.get().test is True


def test_a_test_send_takes_its_own_title_and_body(push, ada, devices):
    response = push.api.post(
        "/push/tests",
        {"installation_id": str(devices[1].id), "title": "Ping", "body": "Pong"},
        key=push.key,
    )

    assert (response.json()["data"]["title"], response.json()["data"]["body"]) == ("Ping", "Pong")


def test_a_test_send_to_another_project_s_installation_is_refused(push):
    foreign = PushInstallationFactory(app__project=push.world.other_project)

    response = push.api.post("/push/tests", {"installation_id": str(foreign.id)}, key=push.key)

    assert issues(response) == [("installation_id", "not_found")]
    assert nothing_stored()


# --- POST /templates/{id}/test with a push template ----------------------------------------


def test_a_push_template_test_renders_the_draft_for_the_installation_s_contact(push, ada, devices):
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, published=True, title="Old")
    TemplateVersionFactory(
        template=template,
        push=True,
        title="Hi {{ contact.fields.first_name }}",
        body="{{ data.x }}",
    )

    response = push.api.post(
        f"/templates/{template.id}/test",
        {"installation_id": str(devices[0].id), "data": {"x": "draft"}},
        key=push.world.keys["sending"],
    )

    assert response.status_code == 202, response.content
    data = response.json()["data"]
    assert data["email_id"] is None
    message = PushMessage.objects.get(pk=data["push_id"])
    assert (message.title, message.body, message.test) == ("Hi Ada", "draft", True)
    assert message.template_id == template.id
    assert list(message.deliveries.values_list("installation_id", flat=True)) == [devices[0].id]


def test_a_push_template_test_renders_for_the_contact_given(push, ada, devices):
    bob = push.contact(first_name="Bob")
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(template=template, push=True, title="Hi {{ contact.fields.first_name }}")

    response = push.api.post(
        f"/templates/{template.id}/test",
        {"installation_id": str(devices[0].id), "contact_id": str(bob.id)},
        key=push.key,
    )

    assert PushMessage.objects.get(pk=response.json()["data"]["push_id"]).title == "Hi Bob"


def test_a_push_template_test_needs_an_installation_of_the_project(push, ada, devices):
    template = MessageTemplateFactory(project=push.world.project, channel="push")
    TemplateVersionFactory(template=template, push=True)
    foreign = PushInstallationFactory(app__project=push.world.other_project)

    unknown = push.api.post(
        f"/templates/{template.id}/test", {"installation_id": str(foreign.id)}, key=push.key
    )
    addressed = push.api.post(
        f"/templates/{template.id}/test", {"to": "ada@example.net"}, key=push.key
    )

    assert issues(unknown) == [("installation_id", "not_found")]
    assert issues(addressed) == [("installation_id", "required")]
    assert nothing_stored()


# --- POST /push/messages/{id}/open ----------------------------------------------------------


def test_an_open_is_recorded_once_per_message_and_installation(push, ada, devices, clock):
    sent = push.send({"contact_id": str(ada.id), "body": "b"}).json()["data"]
    path = f"/push/messages/{sent['id']}/open"

    first = push.api.post(
        path, {"installation_id": str(devices[0].id)}, key=push.world.keys["sending"]
    )
    clock.advance(minutes=5)
    again = push.api.post(path, {"installation_id": str(devices[0].id)}, key=push.key)
    other = push.api.post(path, {"installation_id": str(devices[1].id)}, key=push.key)

    assert first.status_code == 200, first.content
    assert first.json()["data"] == {
        "push_id": sent["id"],
        "installation_id": str(devices[0].id),
        "opened_at": "2026-01-01T12:00:00Z",
        "duplicate": False,
    }
    assert again.json()["data"]["duplicate"] is True
    assert again.json()["data"]["opened_at"] == "2026-01-01T12:00:00Z"
    assert other.json()["data"]["duplicate"] is False
    opens = Event.objects.filter(event="sendrealm.push.open").order_by("created_at")
    assert [event.payload["installation_id"] for event in opens] == [
        str(devices[0].id),
        str(devices[1].id),
    ]
    assert opens[0].payload["push_id"] == sent["id"]
    assert opens[0].contact_id == ada.id


def test_an_open_by_an_installation_the_message_did_not_go_to_is_refused(push, ada, devices):
    sent = push.send({"installation_ids": [str(devices[0].id)], "body": "b"}).json()["data"]

    response = push.api.post(
        f"/push/messages/{sent['id']}/open", {"installation_id": str(devices[1].id)}, key=push.key
    )

    assert issues(response) == [("installation_id", "not_found")]
    assert not Event.objects.filter(event="sendrealm.push.open").exists()


def test_an_open_of_another_project_s_message_is_not_found(push, ada, devices):
    sent = push.send({"contact_id": str(ada.id), "body": "b"}).json()["data"]

    response = push.api.post(
        f"/push/messages/{sent['id']}/open",
        {"installation_id": str(devices[0].id)},
        key=push.world.keys["other_project"],
    )

    assert_error(response, 404, "not_found")


def test_a_read_only_key_cannot_report_opens(push, ada, devices):
    sent = push.send({"contact_id": str(ada.id), "body": "b"}).json()["data"]

    response = push.api.post(
        f"/push/messages/{sent['id']}/open",
        {"installation_id": str(devices[0].id)},
        key=push.world.keys["read_only"],
    )

    assert_error(response, 403, "forbidden")


def test_a_deleted_app_s_messages_stay_readable(push, ada, devices):
    sent = push.send({"contact_id": str(ada.id), "body": "b"}).json()["data"]

    deleted = push.api.delete(f"/push/apps/{push.app.id}", key=push.key)
    response = push.api.get(f"/push/messages/{sent['id']}", key=push.key)

    assert deleted.status_code == 200
    assert response.status_code == 200
    assert [d["installation_id"] for d in response.json()["data"]["deliveries"]] == [
        str(device.id) for device in devices
    ]
    assert PushMessage.objects.get().app_id is None
