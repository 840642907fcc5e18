"""Every class of definition problem is a 400 `validation_error` whose issue points into
the definition; nothing is stored (docs/API.md, Automations: definitions)."""

import copy

import pytest

from automations.definition.durations import parse_duration
from automations.models import Automation
from tests.automations.conftest import error, full_definition, issues

pytestmark = pytest.mark.django_db

EMAIL_ID = "5f0c3c1e-6f1e-4a8e-9d43-1b1c2b3a4d5e"
PUSH_ID = "0b7a1f6c-5a43-4d2b-8f7e-2c9d6e5f4a3b"


def base():
    return full_definition(EMAIL_ID, PUSH_ID)


def step(definition, key):
    return next(s for s in definition["steps"] if s["key"] == key)


def changed(change):
    definition = base()
    change(definition)
    return definition


def refused(automations, definition):
    response = automations.create(definition)
    assert error(response) == (400, "validation_error"), response.json()
    assert not Automation.objects.exists()
    return issues(response)


def test_a_definition_using_every_step_type_is_accepted(automations):
    assert automations.create(base()).status_code == 201


def test_a_loop_through_a_wait_is_accepted(automations):
    definition = {
        "trigger": {"event": "trial.started"},
        "start": "remind",
        "steps": [
            {"key": "remind", "type": "send_email", "template_id": EMAIL_ID, "next": "later"},
            {"key": "later", "type": "wait", "duration": "PT12H", "next": "again"},
            {
                "key": "again",
                "type": "branch",
                "condition": {
                    "all": [{"path": "contact.fields.paid", "op": "exists", "value": False}]
                },
                "then": "remind",
                "else": None,
                "next": None,
            },
        ],
    }

    assert automations.create(definition).status_code == 201


# Schema


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.pop("trigger"), [("definition.trigger", "required")]),
        (lambda d: d.update(steps=[]), [("definition.steps", "out_of_range")]),
        (lambda d: d.update(extra=1), [("definition.extra", "unknown_member")]),
        (
            lambda d: d["trigger"].update(event="Order Completed"),
            [("definition.trigger.event", "invalid_event_name")],
        ),
        (lambda d: d.update(start=7), [("definition.start", "invalid_key")]),
        (
            lambda d: step(d, "welcome").update(type="send_sms"),
            [("definition.steps.0.type", "invalid_choice")],
        ),
        (
            lambda d: step(d, "welcome").pop("template_id"),
            [("definition.steps.0.template_id", "required")],
        ),
        (
            lambda d: step(d, "welcome").update(template_id="welcome-mail"),
            [("definition.steps.0.template_id", "invalid_uuid")],
        ),
        (lambda d: step(d, "welcome").pop("next"), [("definition.steps.0.next", "required")]),
        (
            lambda d: step(d, "welcome").update(duration="P1D"),
            [("definition.steps.0.duration", "unknown_member")],
        ),
        (
            lambda d: step(d, "wait_a_day").update(duration="one day"),
            [("definition.steps.1.duration", "invalid_duration")],
        ),
        (
            lambda d: step(d, "wait_a_day").update(duration="P1M"),
            [("definition.steps.1.duration", "invalid_duration")],
        ),
        (
            lambda d: step(d, "await_review").pop("timeout"),
            [("definition.steps.2.timeout", "required")],
        ),
        (
            lambda d: step(d, "check").update(next="tag"),
            [("definition.steps.3.next", "invalid_value")],
        ),
        (
            lambda d: step(d, "check").update(condition={"all": [], "any": []}),
            [
                ("definition.steps.3.condition", "invalid_condition"),
                ("definition.steps.3.condition.all", "out_of_range"),
                ("definition.steps.3.condition.any", "out_of_range"),
            ],
        ),
        (
            lambda d: step(d, "check").update(
                condition={"all": [{"path": "payload.total", "op": "gt"}]}
            ),
            [("definition.steps.3.condition.all.0.value", "required")],
        ),
        (
            lambda d: step(d, "check").update(
                condition={"all": [{"path": "payload.total", "op": "between", "value": 1}]}
            ),
            [("definition.steps.3.condition.all.0.op", "invalid_choice")],
        ),
        (
            lambda d: step(d, "check").update(
                condition={"all": [{"path": "payload.tags", "op": "in", "value": "vip"}]}
            ),
            [("definition.steps.3.condition.all.0.value", "invalid_type")],
        ),
        (
            lambda d: step(d, "tag").update(fields={}),
            [("definition.steps.5.fields", "out_of_range")],
        ),
        (
            lambda d: step(d, "end").update(next="welcome"),
            [("definition.steps.6.next", "invalid_value")],
        ),
        (
            lambda d: d.update(settings={"reentry": "once_per_correlation"}),
            [("definition.settings.correlation_key", "required")],
        ),
        (
            lambda d: d.update(settings={"reentry": "sometimes"}),
            [("definition.settings.reentry", "invalid_choice")],
        ),
    ],
)
def test_the_schema_reports_each_problem_at_its_path(automations, change, expected):
    assert refused(automations, changed(change)) == expected


def test_a_step_of_an_unknown_type_is_reported_at_its_type_alone(automations):
    definition = changed(lambda d: step(d, "wait_a_day").update(type="sleep"))

    assert refused(automations, definition) == [("definition.steps.1.type", "invalid_choice")]


def test_every_schema_problem_is_reported_at_once(automations):
    definition = base()
    definition["trigger"]["event"] = "Bad"
    step(definition, "welcome").pop("template_id")
    step(definition, "end")["colour"] = "red"

    assert refused(automations, definition) == [
        ("definition.steps.0.template_id", "required"),
        ("definition.steps.6.colour", "unknown_member"),
        ("definition.trigger.event", "invalid_event_name"),
    ]


def test_issue_messages_say_what_is_expected(automations):
    definition = changed(lambda d: step(d, "wait_a_day").update(duration="1 day"))

    response = automations.create(definition)

    [issue] = response.json()["error"]["issues"]
    assert "ISO 8601 duration" in issue["message"]
    assert "`PT10M`" in issue["message"]


# Graph


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: step(d, "welcome").update(next="wait_an_hour"),
            [("definition.steps.0.next", "unknown_step")],
        ),
        (
            lambda d: step(d, "check").update(then="celebrate"),
            [("definition.steps.3.then", "unknown_step")],
        ),
        (
            lambda d: step(d, "await_review").update(on_timeout="nowhere"),
            [("definition.steps.2.on_timeout", "unknown_step")],
        ),
        (lambda d: d.update(start="begin"), [("definition.start", "unknown_step")]),
        (
            lambda d: d["steps"].append({"key": "tag", "type": "exit", "next": None}),
            [("definition.steps.7.key", "duplicate_key")],
        ),
        (
            lambda d: d["steps"].append({"key": "orphan", "type": "exit", "next": None}),
            [("definition.steps.7", "unreachable")],
        ),
        (
            lambda d: step(d, "wait_a_day").update(duration="PT0S"),
            [("definition.steps.1.duration", "invalid_duration")],
        ),
        (
            lambda d: step(d, "await_review").update(timeout="P367D"),
            [("definition.steps.2.timeout", "invalid_duration")],
        ),
        (
            lambda d: step(d, "welcome").update({"from": "not an address"}),
            [("definition.steps.0.from", "invalid_address")],
        ),
    ],
)
def test_graph_checks_report_each_problem_at_its_path(automations, change, expected):
    assert refused(automations, changed(change)) == expected


def test_a_loop_without_a_wait_is_refused_at_the_edge_that_closes_it(automations):
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "welcome",
        "steps": [
            {"key": "welcome", "type": "send_email", "template_id": EMAIL_ID, "next": "check"},
            {
                "key": "check",
                "type": "branch",
                "condition": {"all": [{"path": "payload.total", "op": "gt", "value": 1}]},
                "then": "tag",
                "else": None,
                "next": None,
            },
            {"key": "tag", "type": "update_contact", "fields": {"a": 1}, "next": "welcome"},
        ],
    }

    response = automations.create(definition)

    assert error(response) == (400, "validation_error")
    [issue] = response.json()["error"]["issues"]
    assert (issue["path"], issue["code"]) == ("definition.steps.2.next", "cycle_without_wait")
    assert issue["message"] == (
        "`welcome` -> `check` -> `tag` -> `welcome` loops without a `wait` or "
        "`wait_for_event` step."
    )


def test_a_step_that_goes_to_itself_without_waiting_is_a_loop(automations):
    definition = changed(lambda d: step(d, "tag").update(next="tag"))

    assert ("definition.steps.5.next", "cycle_without_wait") in refused(automations, definition)


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("total", "invalid_path"),
        ("payload.", "invalid_path"),
        ("payload..total", "invalid_path"),
        ("contact.name", "invalid_path"),
        ("contact.fields", "invalid_path"),
        ("event.payload.total", "invalid_path"),
        ("steps.await_review.payload.rating", "invalid_path"),
        ("steps.nobody.outcome", "unknown_step"),
        ("steps.wait_a_day.outcome", "not_a_wait_for_event"),
        ("steps.welcome.event.payload.x", "not_a_wait_for_event"),
    ],
)
def test_branch_condition_paths_are_checked(automations, path, code):
    definition = changed(
        lambda d: step(d, "check").update(condition={"all": [{"path": path, "op": "exists"}]})
    )

    assert refused(automations, definition) == [("definition.steps.3.condition.all.0.path", code)]


@pytest.mark.parametrize(
    "path",
    [
        "payload.total",
        "payload.items.0.sku",
        "contact.id",
        "contact.email",
        "contact.external_id",
        "contact.fields.plan.tier",
        "steps.await_review.outcome",
        "steps.await_review.event.payload.rating",
    ],
)
def test_well_formed_branch_paths_are_accepted(automations, path):
    definition = changed(
        lambda d: step(d, "check").update(condition={"any": [{"path": path, "op": "exists"}]})
    )

    assert automations.create(definition).status_code == 201


def test_a_branch_cannot_read_a_wait_for_event_that_comes_after_it(automations):
    definition = {
        "trigger": {"event": "order.completed"},
        "start": "check",
        "steps": [
            {
                "key": "check",
                "type": "branch",
                "condition": {
                    "all": [{"path": "steps.later.outcome", "op": "eq", "value": "event"}]
                },
                "then": "later",
                "else": None,
                "next": None,
            },
            {
                "key": "later",
                "type": "wait_for_event",
                "event": "order.shipped",
                "timeout": "P1D",
                "next": None,
            },
        ],
    }

    assert refused(automations, definition) == [
        ("definition.steps.0.condition.all.0.path", "not_earlier")
    ]


def test_an_outcome_is_event_or_timeout(automations):
    definition = changed(
        lambda d: step(d, "check").update(
            condition={"all": [{"path": "steps.await_review.outcome", "op": "eq", "value": "yes"}]}
        )
    )

    assert refused(automations, definition) == [
        ("definition.steps.3.condition.all.0.value", "invalid_value")
    ]


def test_a_trigger_filter_cannot_read_steps(automations):
    definition = changed(
        lambda d: d["trigger"].update(
            filter={"all": [{"path": "steps.await_review.outcome", "op": "exists"}]}
        )
    )

    assert refused(automations, definition) == [
        ("definition.trigger.filter.all.0.path", "invalid_path")
    ]


def test_every_graph_problem_is_reported_at_once(automations):
    definition = base()
    step(definition, "welcome")["next"] = "nowhere"
    step(definition, "tag")["next"] = "tag"
    step(definition, "wait_a_day")["duration"] = "PT0S"

    paths = [path for path, _ in refused(automations, definition)]

    assert "definition.steps.0.next" in paths
    assert "definition.steps.1.duration" in paths
    assert "definition.steps.5.next" in paths


# Bounds


def test_a_definition_over_256_kib_is_refused(automations):
    definition = base()
    step(definition, "tag")["fields"] = {"notes": "x" * (256 * 1024)}

    assert refused(automations, definition) == [("definition", "too_large")]


def test_text_postgresql_cannot_store_is_refused_at_its_path(automations):
    definition = base()
    step(definition, "tag")["fields"] = {"nick": "a\u0000b"}

    assert refused(automations, definition) == [
        ("definition.steps.5.fields.nick", "invalid_characters")
    ]


def test_a_patch_is_checked_like_a_create(automations):
    created = automations.created(base())
    broken = copy.deepcopy(base())
    step(broken, "welcome")["next"] = "nowhere"

    response = automations.patch(created["id"], {"definition": broken})

    assert error(response) == (400, "validation_error")
    assert issues(response)[0] == ("definition.steps.0.next", "unknown_step")
    stored = automations.get(created["id"]).json()["data"]["current_draft_version"]["definition"]
    assert stored == base()


# Durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("PT10M", 600),
        ("P1D", 86_400),
        ("P1DT2H", 93_600),
        ("P2W", 1_209_600),
        ("PT1S", 1),
        ("PT1H30M", 5_400),
        ("P366D", 366 * 86_400),
    ],
)
def test_durations_in_weeks_days_hours_minutes_and_seconds_parse(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize(
    "text",
    [
        "P",
        "PT",
        "P1M",
        "P1Y",
        "PT0S",
        "P367D",
        "P1.5D",
        "1D",
        "p1d",
        "P1DT",
        "PT1D",
        "P99999999999999W",
    ],
)
def test_other_durations_do_not_parse(text):
    assert parse_duration(text) is None


@pytest.mark.parametrize("step_type", [["wait"], {"t": 1}, None, 3])
def test_a_step_type_that_is_not_a_string_is_reported_at_type(automations, step_type):
    definition = changed(lambda d: step(d, "wait_a_day").update(type=step_type))

    assert refused(automations, definition) == [("definition.steps.1.type", "invalid_choice")]


def test_a_duration_with_thousands_of_digits_is_refused_not_failed(automations):
    definition = changed(lambda d: step(d, "wait_a_day").update(duration=f"P{'9' * 5000}D"))

    assert refused(automations, definition) == [("definition.steps.1.duration", "invalid_duration")]
