"""The staff console's template pages: versions listed, each previewed in a sandbox."""

import html

import pytest
from django.test import Client

from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_template_page_lists_its_versions(staff, world):
    template = MessageTemplateFactory(project=world.project, name="Welcome")
    TemplateVersionFactory(template=template, superseded=True, subject="First")
    TemplateVersionFactory(template=template, published=True, subject="Second")
    page = staff.get(f"/admin/messaging/messagetemplate/{template.id}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Welcome" in body
    assert "First" in body
    assert "Second" in body


@pytest.mark.parametrize(
    "path",
    ["/admin/messaging/messagetemplate/", "/admin/messaging/templateversion/"],
)
def test_changelists_render(staff, world, path):
    TemplateVersionFactory(template__project=world.project)
    assert staff.get(path).status_code == 200


def test_an_email_version_is_previewed_with_sample_data_in_a_sandboxed_frame(staff, world):
    version = TemplateVersionFactory(
        template__project=world.project,
        subject="Hi {{ contact.fields.first_name }}",
        html='<p>{{ contact.fields.first_name }}</p><script>alert("x")</script>{{ data.gone }}',
        text="Plain {{ contact.email }}",
    )
    page = staff.get(f"/admin/messaging/templateversion/{version.id}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "<strong>Subject:</strong> Hi Ada" in body
    assert '<iframe sandbox="" srcdoc="' in body
    # The message's markup is inside the attribute, escaped: it never runs in the console.
    rendered = '<p>Ada</p><script>alert("x")</script>'
    assert f'srcdoc="{html.escape(rendered)}' in body
    assert '<script>alert("x")</script>' not in body
    assert "Plain ada@example.com" in body
    assert "Undefined: data.gone" in body


def test_a_push_version_is_previewed_with_its_data(staff, world):
    version = TemplateVersionFactory(
        template__project=world.project, template__channel="push", push=True
    )
    page = staff.get(f"/admin/messaging/templateversion/{version.id}/change/")
    body = page.content.decode()
    assert "<strong>Hi Ada</strong>" in body
    assert "Your order 1001 shipped" in body
    assert "https://example.com/orders/1001" in body


def test_a_version_that_does_not_render_says_why(staff, world):
    version = TemplateVersionFactory(
        template__project=world.project, text="{{ 1 | divided_by: 0 }}"
    )
    page = staff.get(f"/admin/messaging/templateversion/{version.id}/change/")
    assert page.status_code == 200
    assert "Does not render: text, line 1" in page.content.decode()


def test_templates_cannot_be_changed_in_the_console(staff, world):
    template = MessageTemplateFactory(project=world.project)
    response = staff.post(
        f"/admin/messaging/messagetemplate/{template.id}/change/", {"name": "Changed"}
    )
    assert response.status_code == 403
    template.refresh_from_db()
    assert template.name != "Changed"
