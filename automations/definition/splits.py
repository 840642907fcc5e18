"""Checks of `split` steps beyond the schema: branch keys unique in the step, percents
summing to 100 (in hundredths, as the engine takes them), and the links each branch's
`next` adds to the graph."""

from collections.abc import Iterator
from typing import Any

from automations.models import StepType
from config.api.errors import Issue

# Percents are taken in hundredths: 33.33 + 33.33 + 33.34 is 100.
HUNDREDTHS = 100


def hundredths(percent: float) -> int:
    return round(percent * HUNDREDTHS)


def split_links(step: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(member path inside the step, target) of each branch's `next`."""
    if step.get("type") != StepType.SPLIT:
        return
    for index, branch in enumerate(step.get("branches", [])):
        yield f"branches.{index}.next", branch.get("next")


def split_issues(steps: list[dict[str, Any]], prefix: str) -> list[Issue]:
    issues = []
    for index, step in enumerate(steps):
        if step["type"] != StepType.SPLIT:
            continue
        where = f"{prefix}.steps.{index}.branches"
        seen: dict[str, int] = {}
        for number, branch in enumerate(step["branches"]):
            if branch["key"] in seen:
                issues.append(
                    Issue(
                        "duplicate_key",
                        f"{where}.{number}.key",
                        f"Another branch ({seen[branch['key']]}) has the key `{branch['key']}`.",
                    )
                )
            seen.setdefault(branch["key"], number)
        total = sum(hundredths(branch["percent"]) for branch in step["branches"])
        if total != 100 * HUNDREDTHS:
            issues.append(
                Issue(
                    "invalid_percent",
                    where,
                    "The branches' `percent`s must sum to 100; they sum to "
                    f"{total / HUNDREDTHS:g}.",
                )
            )
    return issues
