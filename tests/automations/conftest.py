"""Helpers shared by the automations tests: published templates of both channels and a
definition that uses every step type."""

import copy
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from messaging.models import Channel
from tests.automations.api_driver import forget_triggers
from tests.messaging.factories_templates import TemplateVersionFactory


# Each test starts and ends with no trigger map kept in this process.
@pytest.fixture(autouse=True)
def _fresh_triggers() -> Iterator[None]:
    forget_triggers()
    yield
    forget_triggers()


@pytest.fixture
def key(world):
    return world.keys["project"]


def full_definition(email_template_id: Any, push_template_id: Any) -> dict:
    """Every step type, a trigger filter, a branch on an earlier wait_for_event, a loop
    through a wait, and reentry per correlation."""
    return {
        "trigger": {
            "event": "order.completed",
            "filter": {"all": [{"path": "payload.total", "op": "gte", "value": 10}]},
        },
        "start": "welcome",
        "steps": [
            {
                "key": "welcome",
                "type": "send_email",
                "template_id": str(email_template_id),
                "next": "wait_a_day",
            },
            {"key": "wait_a_day", "type": "wait", "duration": "P1D", "next": "await_review"},
            {
                "key": "await_review",
                "type": "wait_for_event",
                "event": "review.submitted",
                "timeout": "P7D",
                "next": "check",
                "on_timeout": "nudge",
            },
            {
                "key": "check",
                "type": "branch",
                "condition": {
                    "any": [
                        {
                            "path": "steps.await_review.event.payload.rating",
                            "op": "gte",
                            "value": 4,
                        },
                        {"path": "contact.fields.vip", "op": "eq", "value": True},
                    ]
                },
                "then": "tag",
                "else": None,
                "next": None,
            },
            {
                "key": "nudge",
                "type": "send_push",
                "template_id": str(push_template_id),
                "next": "wait_a_day",
            },
            {"key": "tag", "type": "update_contact", "fields": {"happy": True}, "next": "end"},
            {"key": "end", "type": "exit", "next": None},
        ],
        "settings": {"reentry": "once_per_correlation", "correlation_key": "order_id"},
    }


@pytest.fixture
def templates(world):
    """A published email template and a published push template of the project."""
    email = TemplateVersionFactory(template__project=world.project, published=True).template
    push = TemplateVersionFactory(
        template__project=world.project,
        template__channel=Channel.PUSH,
        push=True,
        published=True,
    ).template
    return SimpleNamespace(email=email, push=push)


@pytest.fixture
def definition(templates):
    return full_definition(templates.email.id, templates.push.id)


class Automations:
    """The automations API as one key sees it."""

    def __init__(self, api, key, project=None):
        self.api, self.key, self.project = api, key, project

    def _kw(self, kw):
        return {"key": kw.pop("key", self.key), "project": kw.pop("project", self.project), **kw}

    def create(self, definition, name="Post-purchase", **kw):
        body = {"name": name, "definition": copy.deepcopy(definition)}
        body.update(kw.pop("body", {}))
        return self.api.post("/automations", body, **self._kw(kw))

    def created(self, definition, **kw):
        response = self.create(definition, **kw)
        assert response.status_code == 201, response.json()
        return response.json()["data"]

    def get(self, automation_id, suffix="", **kw):
        return self.api.get(f"/automations/{automation_id}{suffix}", **self._kw(kw))

    def patch(self, automation_id, body, **kw):
        return self.api.patch(f"/automations/{automation_id}", body, **self._kw(kw))

    def post(self, automation_id, suffix, body=None, **kw):
        return self.api.post(f"/automations/{automation_id}{suffix}", body, **self._kw(kw))

    def delete(self, automation_id, **kw):
        return self.api.delete(f"/automations/{automation_id}", **self._kw(kw))


@pytest.fixture
def automations(api, world):
    """As the project's full-access integration key."""
    return Automations(api, world.keys["project"])


def error(response):
    body = response.json()
    return response.status_code, body["error"]["code"]


def issues(response):
    return [(i["path"], i["code"]) for i in response.json()["error"]["issues"]]
