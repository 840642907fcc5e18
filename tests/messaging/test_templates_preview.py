"""`POST /templates/{id}/preview`: every variable family, undefined reporting, escaping,
version choice and render failures. A preview stores and sends nothing."""

import uuid

import pytest

from events.models import Event
from messaging.models.templates import MessageTemplate, TemplateVersion
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error

pytestmark = pytest.mark.django_db


def create(api, world, **body):
    body.setdefault("name", "Preview")
    body.setdefault("channel", "email")
    response = api.post("/templates", body, key=world.keys["project"])
    assert response.status_code == 201, response.content
    return response.json()["data"]


def preview(api, world, template, body=None, key="project"):
    response = api.post(f"/templates/{template['id']}/preview", body or {}, key=world.keys[key])
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_preview_renders_contact_event_data_and_project_variables(api, world):
    contact = ContactFactory(
        project=world.project,
        email="ada@example.com",
        external_id="u-1",
        fields={"first_name": "Ada", "tags": ["a", "b"]},
    )
    template = create(
        api,
        world,
        subject="{{ contact.fields.first_name }}, your {{ event.event }}",
        html="<p>{{ contact.email }} ({{ contact.external_id }}) in {{ project.name }}</p>",
        text=(
            "Order {{ event.payload.order_id }}: {{ data.coupon }}"
            "{% for tag in contact.fields.tags %} #{{ tag }}{% endfor %}"
        ),
    )
    data = preview(
        api,
        world,
        template,
        {
            "contact_id": str(contact.id),
            "event": {"event": "order.completed", "payload": {"order_id": "A-1"}},
            "data": {"coupon": "SAVE10"},
        },
    )
    assert data == {
        "rendered": {
            "subject": "Ada, your order.completed",
            "html": "<p>ada@example.com (u-1) in Main</p>",
            "text": "Order A-1: SAVE10 #a #b",
        },
        "undefined_variables": [],
    }


def test_preview_reports_each_undefined_variable_by_its_dotted_path_once(api, world):
    contact = ContactFactory(project=world.project, fields={})
    template = create(
        api,
        world,
        subject="Hi {{ contact.fields.first_name }} {{ contact.fields.first_name }}",
        html="<p>{{ event.payload.items[0].sku }}</p>",
        text="{{ data.coupon }}{% if contact.fields.vip %}VIP{% endif %}{{ unknown }}",
    )
    data = preview(api, world, template, {"contact_id": str(contact.id)})
    assert data["rendered"] == {"subject": "Hi  ", "html": "<p></p>", "text": ""}
    assert data["undefined_variables"] == [
        "contact.fields.first_name",
        "event.payload.items[0].sku",
        "data.coupon",
        "contact.fields.vip",
        "unknown",
    ]


def test_without_a_contact_or_event_their_variables_are_undefined(api, world):
    template = create(api, world, subject="{{ contact.email }}|{{ event.payload.x }}")
    data = preview(api, world, template)
    assert data["rendered"]["subject"] == "|"
    assert data["undefined_variables"] == ["contact.email", "event.payload.x"]


def test_values_inserted_into_html_are_escaped_but_not_in_subject_and_text(api, world):
    contact = ContactFactory(project=world.project, fields={"name": '<b>Tom & "Jerry"</b>'})
    template = create(
        api,
        world,
        subject="{{ contact.fields.name }}",
        html='<p title="{{ contact.fields.name }}">{{ contact.fields.name }}</p>',
        text="{{ contact.fields.name }}",
    )
    data = preview(api, world, template, {"contact_id": str(contact.id)})
    escaped = "&lt;b&gt;Tom &amp; &#34;Jerry&#34;&lt;/b&gt;"
    assert data["rendered"] == {
        "subject": '<b>Tom & "Jerry"</b>',
        "html": f'<p title="{escaped}">{escaped}</p>',
        "text": '<b>Tom & "Jerry"</b>',
    }


def test_push_preview_renders_title_body_and_every_string_in_data(api, world):
    template = create(
        api,
        world,
        channel="push",
        title="{{ data.who }} replied",
        body="{{ event.payload.text | truncate: 8 }}",
        data={"url": "/t/{{ event.payload.id }}", "n": 2, "tags": ["{{ project.name }}"]},
    )
    data = preview(
        api,
        world,
        template,
        {
            "data": {"who": "Bo"},
            "event": {"event": "reply", "payload": {"id": 7, "text": "Hello there"}},
        },
    )
    assert data == {
        "rendered": {
            "title": "Bo replied",
            "body": "Hello...",
            "data": {"url": "/t/7", "n": 2, "tags": ["Main"]},
        },
        "undefined_variables": [],
    }


def test_preview_defaults_to_the_draft_then_the_published_version(api, world):
    template = create(api, world, subject="One", text="x")
    key = world.keys["project"]
    url = f"/templates/{template['id']}"
    api.post(f"{url}/actions/publish", key=key)
    assert preview(api, world, template)["rendered"]["subject"] == "One"
    api.patch(url, {"subject": "Two"}, key=key)
    assert preview(api, world, template)["rendered"]["subject"] == "Two"
    by_id = preview(api, world, template, {"version_id": template["draft_version_id"]})
    assert by_id["rendered"]["subject"] == "One"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"version_id": str(uuid.uuid4())}, "version_id"),
        ({"contact_id": str(uuid.uuid4())}, "contact_id"),
        ({"contact_id": "nope"}, "contact_id"),
        ({"data": [1]}, "data"),
        ({"event": {"payload": {}}}, "event.event"),
        ({"event": {"event": "x", "payload": "y"}}, "event.payload"),
        ({"event": {"event": "x", "extra": 1}}, "event.extra"),
        ({"subject": "inline"}, "subject"),
    ],
)
def test_a_bad_preview_body_is_400_at_the_member(api, world, body, path):
    template = create(api, world, subject="Hi")
    error = assert_error(
        api.post(f"/templates/{template['id']}/preview", body, key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert path in [issue["path"] for issue in error["issues"]]


def test_a_contact_of_another_project_is_400_at_contact_id(api, world):
    template = create(api, world, subject="Hi")
    foreign = ContactFactory(project=world.other_project)
    deleted = ContactFactory(project=world.project, deleted=True)
    for contact in (foreign, deleted):
        error = assert_error(
            api.post(
                f"/templates/{template['id']}/preview",
                {"contact_id": str(contact.id)},
                key=world.keys["project"],
            ),
            400,
            "validation_error",
        )
        assert error["issues"][0]["path"] == "contact_id"


def test_a_template_that_fails_on_the_data_is_422_naming_member_and_line(api, world):
    template = create(api, world, subject="ok", text="a\n{{ data.n | divided_by: 0 }}")
    error = assert_error(
        api.post(
            f"/templates/{template['id']}/preview", {"data": {"n": 1}}, key=world.keys["project"]
        ),
        422,
        "template_render_error",
    )
    assert error["details"].startswith("text, line 2:")
    assert error["issues"][0]["path"] == "text"


def test_loops_are_bounded(api, world):
    template = create(api, world, html="{% for i in (1..50000) %}x{% endfor %}")
    error = assert_error(
        api.post(f"/templates/{template['id']}/preview", {}, key=world.keys["project"]),
        422,
        "template_render_error",
    )
    assert error["issues"][0]["path"] == "html"


def test_a_preview_stores_and_emits_nothing(api, world):
    template = create(api, world, subject="{{ contact.email }}")
    contact = ContactFactory(project=world.project)
    before = (
        list(MessageTemplate.objects.values()),
        list(TemplateVersion.objects.values()),
        Event.objects.count(),
    )
    preview(api, world, template, {"contact_id": str(contact.id)}, key="read_only")
    after = (
        list(MessageTemplate.objects.values()),
        list(TemplateVersion.objects.values()),
        Event.objects.count(),
    )
    assert after == before
