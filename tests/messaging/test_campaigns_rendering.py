"""Rendering one version for a whole fan-out batch (`EmailRenderer`): whatever shortcut it
takes (rendered once when nothing reads `contact`, one render context for templates of
text and output statements), each contact's subject, html and text are what
`render_email` gives for that contact alone, and so is each failure."""

import uuid
from typing import Any

import pytest

from contacts.models import Contact
from messaging.errors import TemplateRenderFailed
from messaging.models import TemplateVersion
from messaging.services.rendering import OUTPUT_LIMIT_BYTES, render_email, template_context
from messaging.services.rendering_batch import EmailRenderer
from messaging.services.tokens import preferences_token
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

FIELDS = [
    {"first_name": "Ada", "city": "Paris", "n": 2},
    {"first_name": "<b>Bob & Co</b>", "city": 'O\'Neil "quoted"', "n": 0},
    {},
    {"first_name": None, "city": 7, "n": "x"},
    {"first_name": ["a", "<b>"], "city": {"x": 1}},
    {"first_name": "", "size": "big", "first": "one"},
    {"first_name": "Ünïcode 😀", "city": "\t\n tabs"},
    {"first_name": "x" * (OUTPUT_LIMIT_BYTES // 2 + 10), "city": "<" * (OUTPUT_LIMIT_BYTES // 3)},
]

# (subject, html, text): each a kind of template the batch renderer treats its own way.
VERSIONS = {
    "name paths": (
        "Hi {{ contact.fields.first_name }}",
        "<p>{{ contact.fields.first_name }} in {{ contact.fields.city }}</p>{{ contact.email }}",
        "{{ contact.fields.size }} {{ contact.fields.first }} {{ contact.external_id }} "
        "{{ contact.id }} {{ contact.fields.first_name.size }} {{ contact.missing.path }}",
    ),
    "filters": (
        "{{ contact.fields.first_name | default: 'there' | upcase }}",
        "<p>{{ contact.fields.city | append: '!' }}</p>{{ contact.fields | size }}",
        "{{ 10 | divided_by: contact.fields.n }}",
    ),
    "nothing read of the contact": (
        "News from {{ project.name }}",
        "<p>{{ 'static & loud' | upcase }}</p>{{ data.missing }}{{ partial }}",
        None,
    ),
    "fails for everyone": ("{{ 1 | divided_by: 0 }}", "<p>fine</p>", "fine"),
    "tags": (
        "{% if contact.fields.first_name %}Hi {{ contact.fields.first_name }}"
        "{% else %}Hi{% endif %}",
        "{% for pair in contact.fields %}<i>{{ pair[0] }}</i>{% endfor %}",
        "{% assign n = contact.fields.first_name | size %}{{ n }}"
        "{% increment c %}{% increment c %}",
    ),
    "a root computed while rendering": ("{{ [project.name].email }}", None, "plain"),
    # Each contact's own preference page, read alone, with the contact and under a tag.
    "the preference page's link": (
        "{{ preferences_url }}",
        '<a href="{{ preferences_url }}">{{ contact.email }}</a>',
        "{% if preferences_url %}Preferences: {{ preferences_url | upcase }}{% endif %}",
    ),
}


def outcome(render: Any) -> Any:
    try:
        return tuple(render())
    except TemplateRenderFailed as error:
        return ("failed", error.details)


def contacts(project: Any) -> list[Contact]:
    return [
        Contact(
            id=uuid.uuid4(),
            project=project,
            email=f"c{n}@example.com" if n != 2 else None,
            external_id="x1" if n == 3 else None,
            fields=fields,
        )
        for n, fields in enumerate(FIELDS)
    ]


@pytest.mark.parametrize("kind", list(VERSIONS))
def test_each_contact_gets_what_rendering_for_it_alone_gives(kind):
    # A project named like the contact variable: the computed root reads `contact`.
    project = ProjectFactory(name="contact")
    subject, html, text = VERSIONS[kind]
    version = TemplateVersion(subject=subject, html=html, text=text)
    renderer = EmailRenderer(version, project=project)

    for contact in contacts(project):
        variables = template_context(project=project, contact=contact)
        alone = outcome(lambda v=variables: render_email(version, v).content().values())
        batched = outcome(lambda v=variables: renderer.render(v["contact"]))
        assert batched == alone, (kind, contact.fields)


def test_the_comparisons_meet_successes_failures_and_the_output_limit():
    project = ProjectFactory(name="contact")
    outcomes = [
        outcome(lambda v=variables, ver=version: render_email(ver, v).content().values())
        for subject, html, text in VERSIONS.values()
        for version in [TemplateVersion(subject=subject, html=html, text=text)]
        for contact in contacts(project)
        for variables in [template_context(project=project, contact=contact)]
    ]

    failures = [details for kind, details in ((o[0], o[-1]) for o in outcomes) if kind == "failed"]
    assert len(failures) < len(outcomes)
    assert any("divide by 0" in details for details in failures), failures
    assert any("limit" in details for details in failures), failures


def test_a_member_that_reads_no_contact_is_rendered_once_for_the_batch():
    project = ProjectFactory(name="Shop")
    version = TemplateVersion(subject="News from {{ project.name }}", html=None, text="Hi")
    renderer = EmailRenderer(version, project=project)
    first, second = contacts(project)[:2]

    one = renderer.render(template_context(project=project, contact=first)["contact"])
    two = renderer.render(template_context(project=project, contact=second)["contact"])

    assert one == two == ("News from Shop", None, "Hi")
    assert one[0] is two[0]


def test_each_contact_links_its_own_preference_page(settings):
    settings.PUBLIC_BASE_URL = "https://mail.example.org"
    project = ProjectFactory(name="Shop")
    version = TemplateVersion(subject="{{ preferences_url }}", html=None, text=None)
    renderer = EmailRenderer(version, project=project)
    first, second = contacts(project)[:2]

    one = renderer.render(template_context(project=project, contact=first)["contact"])[0]
    two = renderer.render(template_context(project=project, contact=second)["contact"])[0]

    assert one == f"https://mail.example.org/p/{preferences_token(first.id)}"
    assert two == f"https://mail.example.org/p/{preferences_token(second.id)}"
