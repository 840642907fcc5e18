"""An automation's report (CONTRACT section 20): entered, converted and their rate for the
runs that took the automation and for the holdout, the lift against the holdout with its
95 % interval, and the same counts per step and per split branch. Read from the report's
counts (`ReportCount`, report_counts.py), a few rows per day, never from the runs.

The lift is the relative difference of the conversion rates, `p_t / p_h - 1`, where `p_t`
is the rate of the runs that took the automation and `p_h` the holdout's. Its interval is
Katz's log method for a ratio of two proportions (Katz et al., 1978): with `x` conversions
of `n` entered in each group,

    se = sqrt(1/x_t - 1/n_t + 1/x_h - 1/n_h)
    [exp(ln(p_t / p_h) - z * se) - 1, exp(ln(p_t / p_h) + z * se) - 1], z = 1.959964

so the interval of the lift is the ratio's, less one. The lift is null when the holdout
has no entries or no conversions (no ratio); the interval also when the treated runs have
no conversion (the log is not defined).
"""

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Sum

from automations.models import Automation, ReportCount
from automations.services.report_counts import SPLIT

# The two-sided 95 % quantile of the standard normal distribution.
Z95 = 1.959963984540054


@dataclass
class Tally:
    entered: int = 0
    completed: int = 0
    converted: int = 0

    @property
    def rate(self) -> float | None:
        return self.converted / self.entered if self.entered else None


@dataclass
class ReportDays:
    """The days a report covers (UTC, both included); None: unbounded."""

    since: dt.date | None = None
    until: dt.date | None = None


@dataclass
class Report:
    treated: Tally = field(default_factory=Tally)
    holdout: Tally = field(default_factory=Tally)
    steps: dict[str, Tally] = field(default_factory=dict)
    branches: dict[tuple[str, str], Tally] = field(default_factory=dict)


def lift_of(treated: Tally, holdout: Tally) -> tuple[float | None, list[float] | None]:
    """The relative difference of the rates and its 95 % interval (module docstring)."""
    if treated.rate is None or not holdout.rate:
        return None, None
    ratio = treated.rate / holdout.rate
    if not treated.converted:
        return ratio - 1, None
    se = math.sqrt(
        1 / treated.converted - 1 / treated.entered + 1 / holdout.converted - 1 / holdout.entered
    )
    log_ratio = math.log(ratio)
    return ratio - 1, [math.exp(log_ratio - Z95 * se) - 1, math.exp(log_ratio + Z95 * se) - 1]


def _definition_order(automation: Automation) -> tuple[list[str], list[tuple[str, str]]]:
    """The steps and split branches of the automation's published version (else its
    draft), in the definition's order."""
    version = automation.current_published_version or automation.current_draft_version
    steps = version.definition.get("steps", []) if version is not None else []
    keys = [step["key"] for step in steps]
    branches = [
        (step["key"], branch["key"])
        for step in steps
        if step.get("type") == SPLIT
        for branch in step.get("branches", [])
    ]
    return keys, branches


def automation_report_get(*, automation: Automation, days: ReportDays) -> dict[str, Any]:
    """The report over the runs that entered on `days`: one aggregate over the counts."""
    counts = ReportCount.objects.filter(automation=automation)
    if days.since is not None:
        counts = counts.filter(day__gte=days.since)
    if days.until is not None:
        counts = counts.filter(day__lte=days.until)
    rows = (
        counts.values_list("holdout", "step_key", "branch_key")
        .annotate(Sum("entered"), Sum("completed"), Sum("converted"))
        .order_by()
    )
    step_keys, branch_keys = _definition_order(automation)
    report = Report(
        steps={key: Tally() for key in step_keys},
        branches={key: Tally() for key in branch_keys},
    )
    # Sorted, so steps and branches no longer in the definition come after it in key order.
    for holdout, step_key, branch_key, entered, completed, converted in sorted(rows):
        tally = Tally(entered=entered, completed=completed, converted=converted)
        if not step_key:
            target = report.holdout if holdout else report.treated
            target.entered += entered
            target.converted += converted
        elif branch_key:
            report.branches[step_key, branch_key] = tally
        else:
            report.steps[step_key] = tally
    return _answer(report)


def _answer(report: Report) -> dict[str, Any]:
    lift, interval = lift_of(report.treated, report.holdout)
    return {
        "entered": report.treated.entered,
        "converted": report.treated.converted,
        "conversion_rate": report.treated.rate,
        "holdout": {
            "entered": report.holdout.entered,
            "converted": report.holdout.converted,
            "conversion_rate": report.holdout.rate,
        },
        "lift": lift,
        "lift_ci95": interval,
        "steps": [
            {
                "key": key,
                "entered": tally.entered,
                "completed": tally.completed,
                "converted": tally.converted,
            }
            for key, tally in report.steps.items()
        ],
        "branches": [
            {
                "step_key": step_key,
                "branch_key": branch_key,
                "entered": tally.entered,
                "converted": tally.converted,
                "conversion_rate": tally.rate,
            }
            for (step_key, branch_key), tally in report.branches.items()
        ],
    }
