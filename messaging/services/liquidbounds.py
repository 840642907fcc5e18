"""Bounds on the work of one Liquid render, whatever its ranges, offsets and limits.

python-liquid bounds the iterations a loop renders (`loop_iteration_limit`), counted after
`offset:` and `limit:`. The items an offset skips are not counted, yet skipping them one by
one costs as much as rendering them (`(1..100000000) offset: 99999995` took seconds), and
filters (`join`, `reverse`, `sort`) walk a range without any limit. So here:

- a range literal `(a..b)` longer than RANGE_LENGTH_LIMIT fails when it is evaluated,
  before anything iterates it;
- every item a loop takes from what it loops over (skipped by `offset:` or rendered) and
  every item of every range made is counted against RENDER_ITEMS_LIMIT per render, so
  nested loops and filters over ranges inside loops are bounded too;
- work no count sees (filters over large data inside a loop) is bounded in time: a render
  past RENDER_SECONDS_LIMIT stops at its next variable lookup or loop item.

The library's parser builds its range and loop expressions itself, with no say for the
environment: `bound_work` gives a parsed template's expressions the bounded classes.
"""

import time
from collections.abc import Iterator
from typing import Any

from liquid import BoundTemplate, RenderContext, Token
from liquid.builtin.expressions import LoopExpression
from liquid.builtin.expressions.primitive import RangeLiteral
from liquid.exceptions import LoopIterationLimitError, ResourceLimitError

# The longest range literal: no loop may run longer (LOOP_ITERATION_LIMIT).
RANGE_LENGTH_LIMIT = 10_000
# Loop and range items one render may take in all (about a second of the slowest filter
# per item at most).
RENDER_ITEMS_LIMIT = 1_000_000
RENDER_SECONDS_LIMIT = 2.0


class RenderBudget:
    """What one render may still spend: items, and time."""

    __slots__ = ("deadline", "items")

    def __init__(self) -> None:
        self.items = 0
        self.deadline = time.monotonic() + RENDER_SECONDS_LIMIT

    def reset(self) -> None:
        """A new render with the same context (the one-version-many-contacts path)."""
        self.items = 0
        self.deadline = time.monotonic() + RENDER_SECONDS_LIMIT

    def spend(self, items: int, token: Token | None) -> None:
        self.items += items
        if self.items > RENDER_ITEMS_LIMIT:
            raise LoopIterationLimitError(
                f"the template takes more than {RENDER_ITEMS_LIMIT} items from its loops "
                "and ranges",
                token=token,
            )
        self.check(token)

    def check(self, token: Token | None) -> None:
        if time.monotonic() > self.deadline:
            raise ResourceLimitError(
                f"the render took longer than {RENDER_SECONDS_LIMIT:g} seconds", token=token
            )


def budget_of(context: RenderContext) -> RenderBudget | None:
    """The budget of a render context that has one (the sandbox's)."""
    budget = getattr(context, "budget", None)
    return budget if isinstance(budget, RenderBudget) else None


class BoundedRange(RangeLiteral):
    """A range literal of at most RANGE_LENGTH_LIMIT items, each counted."""

    __slots__ = ()

    def _make_range(self, start: Any, stop: Any) -> range:
        numbers = super()._make_range(start, stop)
        length = numbers.stop - numbers.start  # len() overflows past sys.maxsize
        if length > RANGE_LENGTH_LIMIT:
            raise LoopIterationLimitError(
                f"the range has {length} items, more than the limit of {RANGE_LENGTH_LIMIT}",
                token=self.token,
            )
        return numbers

    def evaluate(self, context: RenderContext) -> range:
        numbers = super().evaluate(context)
        budget = budget_of(context)
        if budget is not None:
            budget.spend(len(numbers), self.token)
        return numbers


def _checked(items: Iterator[object], budget: RenderBudget, token: Token) -> Iterator[object]:
    for item in items:
        budget.check(token)
        yield item


class BoundedLoop(LoopExpression):
    """A `for` or `tablerow` expression that counts every item it takes from its iterable,
    the ones `offset:` skips included, and checks the time before each item."""

    __slots__ = ()

    def _slice(
        self,
        it: Iterator[object],
        length: int,
        context: RenderContext,
        *,
        limit: int | None,
        offset: int | str | None,
    ) -> tuple[Iterator[object], int]:
        items, count = super()._slice(it, length, context, limit=limit, offset=offset)
        budget = budget_of(context)
        if budget is None:
            return items, count
        # The library records where the slice stops (for `offset: continue`): the items
        # taken from the iterable to get there, skipped or not.
        budget.spend(context.stopindex(f"{self.identifier}-{self.iterable}"), self.token)
        return _checked(items, budget, self.token), count


def bound_work(template: BoundTemplate) -> None:
    """Makes every range literal of a parsed template a BoundedRange and every loop
    expression a BoundedLoop (same slots, so the class can change in place)."""
    context = RenderContext(template)
    nodes = list(template.nodes)
    expressions: list[Any] = []
    while nodes:
        node = nodes.pop()
        nodes.extend(node.children(context, include_partials=False))
        expressions.extend(node.expressions())
    while expressions:
        expression = expressions.pop()
        if type(expression) is RangeLiteral:
            expression.__class__ = BoundedRange
        elif type(expression) is LoopExpression:
            expression.__class__ = BoundedLoop
        expressions.extend(expression.children())
