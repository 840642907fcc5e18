"""A range literal longer than the sandbox allows fails before anything iterates it, whatever
`offset:` or `limit:` say, in every way a template is rendered: preview, test send and
`POST /emails`. Nested loops and filters over ranges count against one budget of items per
render, and what no count sees against a time limit. Loops within the bounds render as
before."""

import pytest

from messaging.errors import TemplateRenderFailed
from messaging.models import Email
from messaging.models.templates import TemplateVersion
from messaging.services import liquidbounds
from messaging.services.liquidbounds import RANGE_LENGTH_LIMIT, RENDER_ITEMS_LIMIT
from messaging.services.rendering import render_email, template_context
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory
from tests.messaging.test_emails_api import assert_error

pytestmark = pytest.mark.django_db

# Skipping all but the last few items of a long range cost the whole range in time.
OFFSET_LOOP = "{% for i in (1..100000000) offset: 99999995 %}{{ i }}{% endfor %}"
MESSAGE = f"the range has 100000000 items, more than the limit of {RANGE_LENGTH_LIMIT}"


def template_with(world, *, published: bool, **content):
    template = MessageTemplateFactory(project=world.project, from_email="n@example.com")
    TemplateVersionFactory(template=template, published=published, **content)
    return template


def assert_range_error(response, path: str) -> None:
    error = assert_error(response, 422, "template_render_error")
    assert error["details"] == f"{path}, line 1: {MESSAGE}"
    assert error["issues"] == [{"code": "render_error", "path": path, "message": MESSAGE}]


def test_a_preview_refuses_a_long_range_skipped_with_an_offset(api, world):
    template = template_with(world, published=False, html=OFFSET_LOOP)

    response = api.post(f"/templates/{template.id}/preview", {}, key=world.keys["project"])

    assert_range_error(response, "html")


def test_a_test_send_refuses_a_long_range_and_queues_nothing(api, world):
    template = template_with(world, published=False, subject=OFFSET_LOOP)

    response = api.post(
        f"/templates/{template.id}/test", {"to": "ada@example.net"}, key=world.keys["project"]
    )

    assert_range_error(response, "subject")
    assert not Email.objects.exists()


def test_a_template_send_refuses_a_long_range_and_stores_nothing(api, world):
    template = template_with(world, published=True, text=OFFSET_LOOP)

    response = api.post(
        "/emails",
        {"to": "ada@example.net", "template_id": str(template.id)},
        key=world.keys["project"],
    )

    assert_range_error(response, "text")
    assert not Email.objects.exists()


@pytest.mark.parametrize(
    "source",
    [
        "{% for i in (1..500000000) limit: 1 %}{{ i }}{% endfor %}",
        "{% assign r = (1..500000000) %}{{ r | join: ',' }}",
        "{% if true %}{% tablerow i in (1..500000000) %}{{ i }}{% endtablerow %}{% endif %}",
        "{{ (1..99999999999999999999999) | last }}",
    ],
)
def test_a_long_range_fails_wherever_it_is_written(world, source):
    context = template_context(project=world.project)

    with pytest.raises(TemplateRenderFailed) as raised:
        render_email(TemplateVersion(text=source), context)

    assert "items, more than the limit of" in raised.value.details
    assert [issue.path for issue in raised.value.issues] == ["text"]


@pytest.mark.parametrize(
    "source",
    [
        # Each inner loop skips 9,999 items to render one: 10,000 iterations in all.
        "{% for i in (1..10000) %}{% for j in (1..10000) offset: 9999 %}{{ j }}"
        "{% endfor %}{% endfor %}",
        "{% assign r = (1..10000) %}{% for i in r %}{% for j in r offset: 9999 %}{{ j }}"
        "{% endfor %}{% endfor %}",
        "{% for i in (1..10000) %}{% assign s = (1..10000) | join: '' %}{% endfor %}",
    ],
)
def test_loops_and_ranges_share_one_budget_of_items(world, source):
    context = template_context(project=world.project)

    with pytest.raises(TemplateRenderFailed) as raised:
        render_email(TemplateVersion(text=source), context)

    assert raised.value.details.endswith(
        f"more than {RENDER_ITEMS_LIMIT} items from its loops and ranges"
    )


def test_work_no_count_sees_is_stopped_by_the_time_limit(world, monkeypatch):
    monkeypatch.setattr(liquidbounds, "RENDER_SECONDS_LIMIT", 0.2)
    # Sorting a long literal once per iteration: few items, much work.
    literal = "x" * 20_000
    source = (
        "{% for i in (1..10000) %}{{ '" + literal + "' | split: '' | sort | size }}{% endfor %}"
    )

    with pytest.raises(TemplateRenderFailed) as raised:
        render_email(TemplateVersion(text=source), template_context(project=world.project))

    assert raised.value.details == "text, line 1: the render took longer than 0.2 seconds"


def test_loops_within_the_bound_still_render(world):
    context = template_context(project=world.project, data={"n": 3})
    source = (
        "{% for i in (1..data.n) %}{{ i }}{% endfor %}|"
        f"{{% for i in (1..{RANGE_LENGTH_LIMIT}) offset: {RANGE_LENGTH_LIMIT - 2} %}}"
        "{{ i }},{% endfor %}|"
        "{% for i in (1..10) limit: 2 offset: 3 reversed %}{{ i }}{% endfor %}|"
        "{% for i in (5..1) %}never{% endfor %}"
    )

    rendered = render_email(TemplateVersion(text=source), context)

    assert rendered.text == f"123|{RANGE_LENGTH_LIMIT - 1},{RANGE_LENGTH_LIMIT},|54|"
