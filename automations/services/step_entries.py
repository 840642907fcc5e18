"""Counting runs into the steps of their versions (`StepEntryCount`), in the caller's
transaction: the engine's writes count the first visit of each step a live run takes,
as they insert the timeline rows.

One statement per flush, its rows in key order, into the shard of the session's server
process (`pg_backend_pid() % STEP_ENTRY_SHARDS`): workers advancing runs of one version at
once add to different rows, and two that share a shard lock its rows in the same order
within a flush. (A batch redone run by run flushes once per run: two such sessions on one
shard could meet in the other order, and PostgreSQL then fails one, which is retried as
any failed batch is.)"""

import functools
import uuid
from collections import Counter
from typing import Any

from django.db import connection

from automations.models import STEP_ENTRY_SHARDS, StepEntryCount

# (version id, step key) -> how many runs entered it.
Entries = Counter[tuple[uuid.UUID, str]]


@functools.lru_cache(maxsize=64)
def _upsert_sql(rows: int) -> str:
    table, quote = StepEntryCount._meta.db_table, connection.ops.quote_name
    entered = quote("entered")
    values = ", ".join([f"(%s, %s, pg_backend_pid() %% {STEP_ENTRY_SHARDS}, %s)"] * rows)
    return (
        # S608: names from the model, values bound.
        f"INSERT INTO {quote(table)} ({quote('version_id')}, {quote('step_key')}, "  # noqa: S608
        f"{quote('shard')}, {entered}) VALUES {values} "
        f"ON CONFLICT ({quote('version_id')}, {quote('step_key')}, {quote('shard')}) "
        f"DO UPDATE SET {entered} = {quote(table)}.{entered} + EXCLUDED.{entered}"
    )


def step_entries_count(entries: Entries) -> None:
    """Adds `entries` to their versions' step counts (one statement)."""
    keys = sorted(key for key, count in entries.items() if count)
    if not keys:
        return
    params: list[Any] = []
    for version_id, step_key in keys:
        params.extend([version_id, step_key, entries[version_id, step_key]])
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(len(keys)), params)
