"""Checks of an automation definition: its JSON Schema (`definition.schema.json`, served
at `GET /automations/definition-schema`), then what a schema cannot say about the graph
of steps. Every problem is an issue whose path points into the definition
(`definition.steps.2.next`); the schema's problems are reported first and alone, since
the graph checks need its shapes."""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from automations.definition.audiences import trigger_event_of, trigger_issues
from automations.definition.durations import parse_duration
from automations.definition.senders import sender_issues
from automations.definition.splits import split_issues, split_links
from automations.models import StepType
from config.api.errors import Issue, ValidationFailed
from config.api.jsonvalues import json_size, stored_json_issues
from messaging.models import Channel

SCHEMA_FILE = Path(__file__).with_name("definition.schema.json")
_SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
_VALIDATOR = Draft202012Validator(_SCHEMA)

# A definition is read on every step of every run: it stays small.
MAX_DEFINITION_BYTES = 256 * 1024
# One answer lists at most this many problems; the rest are found after the fix.
MAX_ISSUES = 50

WAIT_TYPES = frozenset({StepType.WAIT, StepType.WAIT_FOR_EVENT})
# The members that name the step a run goes to next.
EDGE_MEMBERS = ("next", "then", "else", "on_timeout")
SEND_CHANNELS = {StepType.SEND_EMAIL: Channel.EMAIL, StepType.SEND_PUSH: Channel.PUSH}
CONTACT_PATHS = frozenset({"id", "email", "external_id"})
OUTCOMES = ("event", "timeout")
# What `steps.<key>.outcome` of a send step reads (docs/API.md, Delivery policy).
SEND_OUTCOMES = ("sent", "capped", "suppressed", "no_devices")
SEND_TYPES = (StepType.SEND_EMAIL, StepType.SEND_PUSH)


def definition_schema() -> dict[str, Any]:
    """The published JSON Schema of definitions (do not change the returned object)."""
    return _SCHEMA


def _step_members() -> dict[str, frozenset[str]]:
    """Per step type, the members the schema lets a step of that type have."""
    step = _SCHEMA["$defs"]["step"]
    base = set(step["properties"])
    members = {}
    for rule in step["allOf"]:
        step_type = rule["if"]["properties"]["type"]["const"]
        members[step_type] = frozenset(base | set(rule["then"].get("properties", {})))
    return members


STEP_MEMBERS = _step_members()


@dataclass(frozen=True)
class TemplateRef:
    """A send step's template, with the path of its `template_id` for issues."""

    path: str
    step_key: str
    channel: str
    template_id: str


@dataclass(frozen=True)
class CheckedDefinition:
    """What services need from a valid definition."""

    trigger_event: str
    template_refs: tuple[TemplateRef, ...]


def definition_check(definition: Any, *, prefix: str = "definition") -> CheckedDefinition:
    """The definition's facts, or 400 `validation_error` with every problem found."""
    if not isinstance(definition, dict):
        raise ValidationFailed.at(prefix, "Must be a JSON object.", code="invalid_type")
    issues = stored_json_issues(definition, prefix)
    if not issues and json_size(definition) > MAX_DEFINITION_BYTES:
        issues = [
            Issue(
                "too_large",
                prefix,
                f"Must be at most {MAX_DEFINITION_BYTES} bytes as JSON; it is "
                f"{json_size(definition)}.",
            )
        ]
    issues = issues or _schema_issues(definition, prefix) or _graph_issues(definition, prefix)
    if issues:
        raise ValidationFailed("The automation definition is not valid.", issues=issues)
    steps = definition["steps"]
    return CheckedDefinition(
        trigger_event=trigger_event_of(definition["trigger"]),
        template_refs=tuple(
            TemplateRef(
                path=f"{prefix}.steps.{index}.template_id",
                step_key=step["key"],
                channel=SEND_CHANNELS[step["type"]],
                template_id=step["template_id"],
            )
            for index, step in enumerate(steps)
            if step["type"] in SEND_CHANNELS
        ),
    )


def _joined(prefix: str, parts: list[Any]) -> str:
    return ".".join([prefix, *(str(part) for part in parts)])


def _sort_key(issue: Issue) -> list[tuple[int, Any]]:
    # Numeric parts in numeric order: steps.10 after steps.9.
    return [(0, int(part)) if part.isdigit() else (1, part) for part in issue.path.split(".")]


def _capped(issues: list[Issue]) -> list[Issue]:
    unique = list({(issue.code, issue.path): issue for issue in issues}.values())
    return sorted(unique, key=_sort_key)[:MAX_ISSUES]


# Schema


def _schema_issues(definition: dict[str, Any], prefix: str) -> list[Issue]:
    issues: list[Issue] = []
    for error in _VALIDATOR.iter_errors(definition):
        issues.extend(_issues_of(error, prefix))
    return _capped(issues)


def _listed(values: list[Any]) -> str:
    return ", ".join(
        f"`{json.dumps(value)}`" if value is None else f"`{value}`" for value in values
    )


_TYPE_NAMES = {
    "string": "a string",
    "object": "a JSON object",
    "array": "an array",
    "number": "a number",
    "integer": "an integer",
    "boolean": "`true` or `false`",
    "null": "null",
}


def _issues_of(error: SchemaError, prefix: str) -> Iterator[Issue]:
    where = list(error.absolute_path)
    path = _joined(prefix, where)
    keyword = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if keyword == "required" and isinstance(instance, dict):
        for name in error.validator_value:
            if name not in instance:
                yield Issue("required", _joined(prefix, [*where, name]), "This member is required.")
    elif keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = set(schema.get("properties", {}))
        for name in instance:
            if name not in allowed:
                yield Issue("unknown_member", _joined(prefix, [*where, name]), "Unknown member.")
    elif keyword == "unevaluatedProperties" and isinstance(instance, dict):
        # Only steps use it. Members are judged against the step's type; a step whose type
        # is unknown is reported at `type` alone.
        step_type = instance.get("type")
        members = STEP_MEMBERS.get(step_type) if isinstance(step_type, str) else None
        for name in instance:
            if members is not None and name not in members:
                yield Issue(
                    "unknown_member",
                    _joined(prefix, [*where, name]),
                    f"A `{instance['type']}` step has no member `{name}`.",
                )
    elif "x-message" in schema and keyword in (
        "pattern",
        "type",
        "const",
        "minProperties",
        "maxProperties",
    ):
        yield Issue(schema.get("x-issue-code", "invalid_value"), path, schema["x-message"])
    elif keyword == "type":
        wanted = error.validator_value
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        yield Issue("invalid_type", path, f"Must be {' or '.join(_TYPE_NAMES[n] for n in names)}.")
    elif keyword in ("enum", "const"):
        choices = error.validator_value if keyword == "enum" else [error.validator_value]
        yield Issue("invalid_choice", path, f"Must be one of {_listed(choices)}.")
    elif keyword in ("minItems", "maxItems"):
        bound = "at least" if keyword == "minItems" else "at most"
        count = error.validator_value
        yield Issue("out_of_range", path, f"Must hold {bound} {count} item{'s' * (count != 1)}.")
    elif keyword in ("minLength", "maxLength"):
        bound = "at least" if keyword == "minLength" else "at most"
        count = error.validator_value
        yield Issue("out_of_range", path, f"Must be {bound} {count} character{'s' * (count != 1)}.")
    elif keyword in ("minProperties", "maxProperties"):
        bound = "at least" if keyword == "minProperties" else "at most"
        count = error.validator_value
        yield Issue("out_of_range", path, f"Must hold {bound} {count} member{'s' * (count != 1)}.")
    elif keyword == "propertyNames":
        yield Issue(
            "bad_key", _joined(prefix, [*where, instance]), "Field names are 1 to 100 characters."
        )
    else:
        yield Issue("invalid_value", path, "Does not match the definition schema.")


# Graph


def _graph_issues(definition: dict[str, Any], prefix: str) -> list[Issue]:
    steps: list[dict[str, Any]] = definition["steps"]
    issues: list[Issue] = []
    at: dict[str, int] = {}
    for index, step in enumerate(steps):
        if step["key"] in at:
            issues.append(
                Issue(
                    "duplicate_key",
                    f"{prefix}.steps.{index}.key",
                    f"Another step (steps.{at[step['key']]}) has the key `{step['key']}`.",
                )
            )
        else:
            at[step["key"]] = index
    edges: dict[str, list[tuple[str, str]]] = {key: [] for key in at}
    for index, step in enumerate(steps):
        links = [(member, step.get(member)) for member in EDGE_MEMBERS]
        for member, target in [*links, *split_links(step)]:
            if not isinstance(target, str):
                continue
            if target not in at:
                issues.append(
                    Issue(
                        "unknown_step",
                        f"{prefix}.steps.{index}.{member}",
                        f"No step has the key `{target}`.",
                    )
                )
            elif at[step["key"]] == index:
                edges[step["key"]].append((member, target))
    start = definition["start"]
    if start not in at:
        issues.append(Issue("unknown_step", f"{prefix}.start", f"No step has the key `{start}`."))
    elif not issues:
        # With a broken link, the steps behind it would all be reported: fix links first.
        reachable = _reachable(edges, start)
        issues += [
            Issue(
                "unreachable",
                f"{prefix}.steps.{index}",
                f"Step `{key}` cannot be reached from `start` (`{start}`).",
            )
            for key, index in at.items()
            if key not in reachable
        ]
    issues += _cycle_issues(steps, at, edges, prefix)
    issues += _duration_issues(steps, prefix)
    issues += sender_issues(steps, prefix)
    types = {key: steps[index]["type"] for key, index in at.items()}
    issues += _condition_issues(definition, types, edges, prefix)
    issues += _goal_issues(definition, prefix)
    issues += split_issues(steps, prefix)
    issues += trigger_issues(definition["trigger"], prefix)
    return _capped(issues)


def _goal_issues(definition: dict[str, Any], prefix: str) -> list[Issue]:
    """The goal's window is a duration the engine takes; its filter reads what a trigger
    filter reads; `exit_on_goal` needs a goal."""
    goal = definition.get("goal")
    if goal is None:
        if (definition.get("settings") or {}).get("exit_on_goal"):
            where = f"{prefix}.settings.exit_on_goal"
            return [Issue("goal_required", where, "`exit_on_goal` needs a `goal`.")]
        return []
    issues = []
    if parse_duration(goal["within"]) is None:
        issues.append(Issue("invalid_duration", f"{prefix}.goal.within", DURATION_RULE))
    for where, comparison in _comparisons(goal.get("filter") or {}, f"{prefix}.goal.filter"):
        issues += _comparison_issues(comparison, where, branch=None, types={}, edges={})
    return issues


def _reachable(edges: dict[str, list[tuple[str, str]]], origin: str) -> set[str]:
    seen = {origin}
    pending = [origin]
    while pending:
        for _, target in edges[pending.pop()]:
            if target not in seen:
                seen.add(target)
                pending.append(target)
    return seen


def _cycle_issues(
    steps: list[dict[str, Any]],
    at: dict[str, int],
    edges: dict[str, list[tuple[str, str]]],
    prefix: str,
) -> list[Issue]:
    """A loop is fine when it passes a wait; one without would spin the run forever. So
    the graph without its wait steps must have no cycle: each back edge found by a
    depth-first walk over it closes one."""
    moving = {key for key, index in at.items() if steps[index]["type"] not in WAIT_TYPES}
    issues: list[Issue] = []
    done: set[str] = set()
    for root in sorted(moving, key=at.__getitem__):
        if root in done:
            continue
        trail = [root]
        on_trail = {root}
        iterators = [iter(edges[root])]
        while iterators:
            step = next(iterators[-1], None)
            if step is None:
                iterators.pop()
                finished = trail.pop()
                on_trail.discard(finished)
                done.add(finished)
                continue
            member, target = step
            if target not in moving or target in done:
                continue
            if target in on_trail:
                loop = [*trail[trail.index(target) :], target]
                issues.append(
                    Issue(
                        "cycle_without_wait",
                        f"{prefix}.steps.{at[trail[-1]]}.{member}",
                        f"{' -> '.join(f'`{key}`' for key in loop)} loops without a `wait` "
                        "or `wait_for_event` step.",
                    )
                )
                continue
            trail.append(target)
            on_trail.add(target)
            iterators.append(iter(edges[target]))
    return issues


def _duration_issues(steps: list[dict[str, Any]], prefix: str) -> list[Issue]:
    issues = []
    for index, step in enumerate(steps):
        member = {StepType.WAIT: "duration", StepType.WAIT_FOR_EVENT: "timeout"}.get(step["type"])
        if member and parse_duration(step[member]) is None:
            issues.append(
                Issue("invalid_duration", f"{prefix}.steps.{index}.{member}", DURATION_RULE)
            )
    return issues


DURATION_RULE = (
    "Must be a duration from `PT1S` to `P366D` in weeks, days, hours, minutes and seconds, "
    "such as `PT10M`, `P1D` or `P1DT2H`."
)


def _comparisons(condition: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for group, items in condition.items():
        for index, comparison in enumerate(items):
            yield f"{path}.{group}.{index}", comparison


PATH_RULE = (
    "Must be `payload.<field>`, `contact.id`, `contact.email`, `contact.external_id` or "
    "`contact.fields.<field>`"
)


def _condition_issues(
    definition: dict[str, Any],
    types: dict[str, str],
    edges: dict[str, list[tuple[str, str]]],
    prefix: str,
) -> list[Issue]:
    issues = []
    trigger_filter = definition["trigger"].get("filter")
    if trigger_filter is not None:
        for where, comparison in _comparisons(trigger_filter, f"{prefix}.trigger.filter"):
            issues += _comparison_issues(comparison, where, branch=None, types=types, edges=edges)
    for index, step in enumerate(definition["steps"]):
        if step["type"] != StepType.BRANCH:
            continue
        for where, comparison in _comparisons(
            step["condition"], f"{prefix}.steps.{index}.condition"
        ):
            issues += _comparison_issues(
                comparison, where, branch=step["key"], types=types, edges=edges
            )
    return issues


def _comparison_issues(
    comparison: dict[str, Any],
    where: str,
    *,
    branch: str | None,
    types: dict[str, str],
    edges: dict[str, list[tuple[str, str]]],
) -> list[Issue]:
    parts = comparison["path"].split(".")
    path = f"{where}.path"
    if not all(parts[1:]) or len(parts) < 2:
        return [Issue("invalid_path", path, f"{PATH_RULE}; no part may be empty.")]
    head, rest = parts[0], parts[1:]
    if head == "payload":
        return []
    if head == "contact":
        if (len(rest) == 1 and rest[0] in CONTACT_PATHS) or (rest[0] == "fields" and len(rest) > 1):
            return []
        return [Issue("invalid_path", path, f"{PATH_RULE}.")]
    if head != "steps":
        rule = PATH_RULE if branch is None else f"{PATH_RULE}, or `steps.<key>.…`"
        return [Issue("invalid_path", path, f"{rule}.")]
    if branch is None:
        return [
            Issue(
                "invalid_path",
                path,
                f"A trigger filter cannot read `steps.`: no step has run yet. {PATH_RULE}.",
            )
        ]
    key, tail = rest[0], rest[1:]
    if tail != ["outcome"] and not (tail[:2] == ["event", "payload"] and len(tail) > 2):
        return [
            Issue(
                "invalid_path",
                path,
                f"Must be `steps.{key}.outcome` or `steps.{key}.event.payload.<field>`.",
            )
        ]
    if key not in types:
        return [Issue("unknown_step", path, f"No step has the key `{key}`.")]
    reads_send = tail == ["outcome"] and types[key] in SEND_TYPES
    if types[key] != StepType.WAIT_FOR_EVENT and not reads_send:
        return [
            Issue(
                "not_a_wait_for_event",
                path,
                f"`steps.{key}.outcome` can only name a `wait_for_event` or send step, "
                f"`steps.{key}.event` only a `wait_for_event` step.",
            )
        ]
    if branch not in _reachable(edges, key) or key == branch:
        return [
            Issue(
                "not_earlier",
                path,
                f"Step `{key}` does not come before `{branch}`, so it has not run there.",
            )
        ]
    if tail == ["outcome"] and comparison["op"] in ("eq", "ne", "in"):
        values = comparison["value"] if comparison["op"] == "in" else [comparison["value"]]
        if reads_send and any(value not in SEND_OUTCOMES for value in values):
            return [
                Issue(
                    "invalid_value",
                    f"{where}.value",
                    "A send step's outcome is `sent`, `capped`, `suppressed` or `no_devices`.",
                )
            ]
        if not reads_send and any(value not in OUTCOMES for value in values):
            return [Issue("invalid_value", f"{where}.value", "An outcome is `event` or `timeout`.")]
    return []
