"""Counting into the daily delivery figures (`DeliveryDay`), in the caller's transaction:
delivery counts `sent` once per batch of accepted emails, ESP webhooks count `delivered`,
`bounced` and `complained` when they set the stamp, tracking counts `opened` and
`clicked` when it sets the first one. So a figure moves exactly when the email's stamp
does, and rolls back with it.

One statement per call, its rows in key order: two transactions counting into the same
rows lock them in the same order, so they wait for each other but never deadlock. A row
is held until its transaction commits; the busiest writer (delivery) counts once per
batch, and the others are one-email transactions."""

import datetime as dt
import functools
from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db import connection

from messaging.models import DELIVERY_FIGURES, Channel, DeliveryDay

# (day, project id, channel, figure) -> how many.
Counts = Counter[tuple[dt.date, Any, str, str]]


def day_of(at: dt.datetime) -> dt.date:
    """The UTC day a change happened on."""
    return at.astimezone(dt.UTC).date()


@functools.lru_cache(maxsize=64)
def _upsert_sql(rows: int) -> str:
    meta, quote = DeliveryDay._meta, connection.ops.quote_name
    columns = ["date", "project_id", "channel", *DELIVERY_FIGURES]
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    added = ", ".join(
        f"{quote(name)} = {quote(meta.db_table)}.{quote(name)} + EXCLUDED.{quote(name)}"
        for name in DELIVERY_FIGURES
    )
    return (
        # S608: names from the model, values bound.
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(map(quote, columns))}) "  # noqa: S608
        f"VALUES {', '.join([placeholders] * rows)} "
        f"ON CONFLICT ({quote('date')}, {quote('project_id')}, {quote('channel')}) "
        f"DO UPDATE SET {added}"
    )


def delivery_days_count(counts: Counts) -> None:
    """Adds `counts` to the figures, creating the days' rows as needed (one statement)."""
    rows: dict[tuple[dt.date, str, str], dict[str, int]] = {}
    for (day, project_id, channel, figure), count in counts.items():
        if figure not in DELIVERY_FIGURES:
            raise ValueError(f"No delivery figure {figure!r}.")
        if count:
            rows.setdefault((day, str(project_id), channel), dict.fromkeys(DELIVERY_FIGURES, 0))[
                figure
            ] += count
    if not rows:
        return
    params: list[Any] = []
    for key in sorted(rows):
        params.extend([*key, *(rows[key][figure] for figure in DELIVERY_FIGURES)])
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(len(rows)), params)


def email_figures_count(
    changes: Iterable[tuple[Any, dt.datetime, str]],
) -> None:
    """Counts email changes, each `(project id, when, figure)`."""
    delivery_days_count(
        Counter(
            (day_of(at), project_id, Channel.EMAIL.value, figure)
            for project_id, at, figure in changes
        )
    )
