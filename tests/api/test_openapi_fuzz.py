"""Every operation of /openapi.json, fuzzed with schemathesis against the app in-process:
no answer is a server error, every answer is the JSON envelope of CONTRACT section 1, and
answers and refusals match what the document says.

Bounded and repeatable: a fixed number of examples per operation, derandomized, no
example database, so CI sees the same requests on every run.
"""

import itertools
import uuid
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from contacts.audiences.models import Audience
from contacts.topics.models import Topic
from tenancy.api.permissions import PROJECT_HEADER_NAME as PROJECT_HEADER
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    AutomationVersionFactory,
)
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_campaigns import CampaignFactory
from tests.messaging.factories_templates import MessageTemplateFactory

# Rows every generated request may name, so requests reach past the 404 of an unknown id.
KNOWN_IDS = {
    "contact_id": uuid.UUID("00000000-0000-4000-8000-00000000c0de"),
    "audience_id": uuid.UUID("00000000-0000-4000-8000-0000000a0d1e"),
    "topic_id": uuid.UUID("00000000-0000-4000-8000-00000000701c"),
    "automation_id": uuid.UUID("00000000-0000-4000-8000-0000a0701a11"),
    "version_id": uuid.UUID("00000000-0000-4000-8000-0000a0701a12"),
    "run_id": uuid.UUID("00000000-0000-4000-8000-0000a0701a13"),
    "campaign_id": uuid.UUID("00000000-0000-4000-8000-0000ca3a1900"),
    "template_id": uuid.UUID("00000000-0000-4000-8000-00007e3a1a7e"),
}

CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {
            "max-examples": 25,
            "deterministic": True,
            "database": "none",
            # Query parameters an operation does not define are ignored, not refused.
            "allow-extra-parameters": False,
        },
        "checks": {
            # A schema-valid `after` is still only good when the service issued it, and a
            # valid-looking id names nothing: 400 and 404 are right answers to valid data.
            "positive_data_acceptance": {"enabled": False},
            # An invalid body may also be refused for its size (413) before it is read.
            "negative_data_rejection": {
                "expected-statuses": [
                    400,
                    401,
                    403,
                    404,
                    405,
                    406,
                    409,
                    413,
                    415,
                    422,
                    428,
                    429,
                    500,
                    501,
                    502,
                    503,
                    504,
                    505,
                ]
            },
        },
        "operations": [
            {
                # A batch judges each item alone: an invalid item is a `rejected` result in
                # a 202, never a refusal of the batch (CONTRACT section 5).
                "include-path": "/events/batch",
                "checks": {"negative_data_rejection": {"enabled": False}},
            },
            {
                # Segment's bodies are loose as its clients send them (numeric ids, members
                # of any type it ignores): data outside the documented types may be right.
                "include-path-regex": "^/v1/",
                "checks": {"negative_data_rejection": {"enabled": False}},
            },
        ],
    }
)

schema = schemathesis.openapi.from_wsgi("/openapi.json", get_wsgi_application(), config=CONFIG)


# The project of the running test, for requests that name it in the header.
CURRENT_PROJECT: dict[str, str] = {}
# Every other case is aimed; the order of cases is fixed, so the choice is too.
_TURNS = itertools.count()


def _negative_at(case: Any, location: str) -> bool:
    return case.meta is not None and case.meta.is_negative_at(location)


def aim(case: Any) -> None:
    """Every other case names rows that exist and the key's own project: a random id is a
    404 or 403 before the operation does any work. Parts generated to be invalid stay as
    they are, so refusals are still checked."""
    if next(_TURNS) % 2:
        return
    if case.path_parameters and not _negative_at(case, "path"):
        for name in case.path_parameters.keys() & KNOWN_IDS.keys():
            case.path_parameters[name] = str(KNOWN_IDS[name])
    if case.headers and PROJECT_HEADER in case.headers and not _negative_at(case, "header"):
        case.headers[PROJECT_HEADER] = CURRENT_PROJECT["id"]
    if isinstance(case.body, (dict, list)) and not _negative_at(case, "body"):
        _known_ids_in(case.body)


def _known_ids_in(value: Any) -> None:
    """Points the id members of a body (`contact_id`, `topic_id` ...) at existing rows."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for name, item in list(items):
        if isinstance(item, (dict, list)):
            _known_ids_in(item)
        elif name in KNOWN_IDS and isinstance(item, str):
            value[name] = str(KNOWN_IDS[name])


def envelope(ctx: Any, response: Any, case: Any) -> None:
    """CONTRACT section 1: `{status, data}` (lists add `metadata`) or `{status, error}`."""
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), (
        "the answer is not JSON"
    )
    body = response.json()
    assert isinstance(body, dict), "the answer is not a JSON object"
    if case.method == "POST" and case.path.startswith("/v1/") and response.status_code < 400:
        # Segment's success body, as its clients expect it (its errors are the envelope).
        assert body == {"success": True}, 'a Segment success is `{"success": true}`'
        return
    assert body.get("status") == response.status_code, "`status` differs from the HTTP status"
    if response.status_code >= 400:
        assert set(body) == {"status", "error"}, f"error envelope members: {sorted(body)}"
        error = body["error"]
        assert set(error) == {"code", "message", "details", "issues"}, sorted(error)
        assert all(isinstance(error[name], str) for name in ("code", "message", "details"))
        assert isinstance(error["issues"], list)
        for issue in error["issues"]:
            assert set(issue) == {"code", "path", "message"}, sorted(issue)
            assert all(isinstance(value, str) for value in issue.values())
    else:
        assert "data" in body, "a success envelope carries `data`"
        assert set(body) <= {"status", "data", "metadata"}, sorted(body)


@pytest.fixture
def _connection_kept():
    """The app runs in this thread inside the test's transaction: like Django's test client,
    it must not close the connection at the end of each request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def key(world, _connection_kept):
    """A full-access project key of a project holding the rows of KNOWN_IDS."""
    ContactFactory(id=KNOWN_IDS["contact_id"], project=world.project, email="fuzz@example.com")
    Audience.objects.create(id=KNOWN_IDS["audience_id"], project=world.project, name="Fuzzers")
    Topic.objects.create(id=KNOWN_IDS["topic_id"], project=world.project, name="Fuzzing")
    automation = AutomationFactory(
        id=KNOWN_IDS["automation_id"], project=world.project, published=True
    )
    automation.current_draft_version = AutomationVersionFactory(
        id=KNOWN_IDS["version_id"], automation=automation
    )
    automation.save()
    AutomationRunFactory(id=KNOWN_IDS["run_id"], automation=automation, waiting=True)
    template = MessageTemplateFactory(id=KNOWN_IDS["template_id"], project=world.project)
    CampaignFactory(
        id=KNOWN_IDS["campaign_id"],
        project=world.project,
        template=template,
        audience_id=KNOWN_IDS["audience_id"],
    )
    CURRENT_PROJECT["id"] = str(world.project.id)
    yield world.keys["project"]
    CURRENT_PROJECT.clear()


@schema.parametrize()
@settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_every_operation_answers_its_documented_envelope(case, key):
    aim(case)
    case.call_and_validate(headers={"Authorization": f"Bearer {key}"}, additional_checks=[envelope])
