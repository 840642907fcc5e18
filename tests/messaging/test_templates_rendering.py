"""The rendering API senders call: context, email and push rendering, the sandbox."""

import threading

import pytest

from config.api.errors import ServiceError
from messaging.models.templates import TemplateVersion
from messaging.services.rendering import (
    OUTPUT_LIMIT_BYTES,
    RenderedEmail,
    RenderedPush,
    SampleEvent,
    liquid_problem,
    render_email,
    render_push,
    render_version,
    template_context,
)
from messaging.services.tokens import preferences_token
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_templates import TemplateVersionFactory

pytestmark = pytest.mark.django_db


def test_the_context_holds_the_variable_families(world, settings):
    settings.PUBLIC_BASE_URL = "https://mail.example.org"
    contact = ContactFactory(
        project=world.project, email="a@example.com", external_id="x1", fields={"k": 1}
    )
    context = template_context(
        project=world.project,
        contact=contact,
        event=SampleEvent("order.completed", {"total": 3}),
        data={"coupon": "C"},
    )
    assert context == {
        "project": {"id": str(world.project.id), "name": "Main"},
        "contact": {
            "id": str(contact.id),
            "email": "a@example.com",
            "external_id": "x1",
            "fields": {"k": 1},
        },
        "preferences_url": f"https://mail.example.org/p/{preferences_token(contact.id)}",
        "event": {"event": "order.completed", "payload": {"total": 3}},
        "data": {"coupon": "C"},
    }
    # Without a contact there is no preference page to link.
    assert "preferences_url" not in template_context(project=world.project)


def test_senders_may_add_variables_of_their_own(world):
    context = template_context(
        project=world.project, extra={"steps": {"wait": {"outcome": "event"}}}
    )
    version = TemplateVersion(subject="{{ steps.wait.outcome }}")
    assert render_email(version, context).subject == "event"


def test_render_email_keeps_absent_members_absent(world):
    rendered = render_email(
        TemplateVersion(subject="S", html=None, text="T"),
        template_context(project=world.project),
    )
    assert rendered == RenderedEmail(subject="S", html=None, text="T", undefined_variables=[])


def test_render_version_follows_the_template_channel(world):
    version = TemplateVersionFactory(
        template__project=world.project, template__channel="push", push=True
    )
    rendered = render_version(
        version, template_context(project=world.project, event=SampleEvent("e", {"order_id": 9}))
    )
    assert isinstance(rendered, RenderedPush)
    assert rendered.body == "Your order 9 shipped"
    assert rendered.data == {"url": "https://example.com/orders/9"}
    assert rendered.undefined_variables == ["contact.fields.first_name"]


def test_undefined_variables_belong_to_their_own_render(world):
    context = template_context(project=world.project)
    first = render_push(TemplateVersion(title="{{ a }}"), context)
    second = render_push(TemplateVersion(title="{{ b }}", body="{{ b }}{{ c.d }}"), context)
    assert first.undefined_variables == ["a"]
    assert second.undefined_variables == ["b", "c.d"]


def test_renders_in_parallel_threads_report_their_own_variables(world):
    context = template_context(project=world.project)
    results: dict[int, list[str]] = {}

    def work(index: int) -> None:
        for _ in range(50):
            version = TemplateVersion(subject=f"{{{{ only_{index} }}}}")
            results[index] = render_email(version, context).undefined_variables

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: [f"only_{i}"] for i in range(4)}


def test_keys_that_are_not_names_are_reported_in_brackets(world):
    version = TemplateVersion(subject="{{ contact.fields['first name'] }}{{ data.list[2] }}")
    context = template_context(project=world.project, data={"list": []})
    assert render_email(version, context).undefined_variables == [
        'contact.fields["first name"]',
        "data.list[2]",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "{% include 'secrets.txt' %}",
        "{% render 'other' %}",
        "{{ x | no_such_filter }}",
        "{% unless x %}",
        "{{ x",
    ],
)
def test_the_sandbox_refuses_what_it_does_not_allow(source):
    assert liquid_problem(source) is not None


def test_output_is_bounded(world):
    version = TemplateVersion(
        text="{% for i in (1..5000) %}{{ data.big }}{% endfor %}",
    )
    context = template_context(project=world.project, data={"big": "x" * 1000})
    assert OUTPUT_LIMIT_BYTES < 5000 * 1000
    with pytest.raises(ServiceError) as caught:
        render_email(version, context)
    assert caught.value.code == "template_render_error"


@pytest.mark.parametrize(
    ("subject", "html", "text"),
    [
        ("t={{ event.payload.t }}", None, "Order {{ event.payload.n }}"),
        ("Hi {{ contact.fields.name }}", "<p>{{ contact.fields.name }}</p>", None),
        ("{{ missing.path }} {{ steps.a.b }}", "<b>{{ data.html }}</b>", "{{ data.n | plus: 1 }}"),
        ("{% if data.n %}{{ data.n }}{% endif %}", None, "{{ data.list.size }} {{ data.x.y }}"),
        ("{{ data.n | divided_by: 0 }}", None, "x"),
    ],
)
def test_a_version_renderer_renders_as_render_email(world, subject, html, text):
    from messaging.services.rendering import render_email
    from messaging.services.rendering_batch import EmailVersionRenderer

    version = TemplateVersionFactory(
        template__project=world.project, subject=subject, html=html, text=text
    )
    renderer = EmailVersionRenderer(version)
    contexts = [
        {"event": {"event": "e", "payload": {"t": 1.5, "n": 3}}, "data": {"n": 2}},
        {"contact": {"fields": {"name": "<Ann & Bo>"}}, "data": {"html": "<i>", "n": 0}},
        {"data": {"list": [1, 2], "x": {"y": "z"}, "n": "7"}, "steps": {"a": {"b": 1}}},
        {},
    ]

    def outcome(render, variables):
        try:
            return render(variables)
        except Exception as error:  # compared below: the same failure, or the same result
            return (type(error), str(error), getattr(error, "details", None))

    for variables in contexts * 2:
        assert outcome(renderer.render, variables) == outcome(
            lambda v: render_email(version, v), variables
        )
