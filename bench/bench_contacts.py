"""`POST /contacts/upsert` of new and of existing contacts against a raw psycopg
`INSERT ... ON CONFLICT ... DO UPDATE` of the same rows, at 1 and 16 clients.

Every request carries another address (new) or changes a field of one of a pool of
existing contacts (existing), so neither side measures a no-op. The API writes the contact
and its `sendrealm.contact.created`/`.updated` event row in one statement, and so does the
baseline (`ratio`): the same work, written by hand, one prepared statement in autocommit.
`contact_only_ratio` is against the contact's statement alone, the baseline of these lines
until 2026-11-29, kept so their history reads on. `ceiling_ratio` is against the nearest
lean write, the single-event ceiling (`ceiling_events_ingest_c{N}`, bench/ceiling.py) at
the same concurrency.
"""

from __future__ import annotations

import itertools
import json
import random
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from bench.harness import Context, log
from bench.loadgen import HttpSpec, Measurement, run_clients
from config.db.ids import uuid7

CONCURRENCY = (1, 16)
POOL = 2000  # existing contacts; wide enough that clients rarely wait on one row lock

BASELINE_SQL = """
INSERT INTO contacts_contact
    (id, project_id, email, external_id, fields, created_at, updated_at, deleted_at)
VALUES (%(id)s, %(project_id)s, %(email)s, NULL, %(set)s::jsonb, now(), now(), NULL)
ON CONFLICT (project_id, email) WHERE deleted_at IS NULL AND email IS NOT NULL
DO UPDATE SET fields = contacts_contact.fields || %(set)s::jsonb, updated_at = now()
RETURNING id, email, external_id, fields, created_at, updated_at, (xmax = 0) AS created
"""

# The API's work by hand: the contact's statement above, then its event row (the columns
# the API writes, a time-ordered id as the API's), in one statement.
SAME_WORK_SQL = f"""
WITH c AS ({BASELINE_SQL}), e AS (
    INSERT INTO events_event
        (id, project_id, event, source, email, external_id, contact_id, payload, occurred_at,
         status, attempts, next_attempt_at, last_error, error_code, created_at)
    SELECT %(event_id)s, %(project_id)s,
           CASE WHEN c.created THEN 'sendrealm.contact.created'
                ELSE 'sendrealm.contact.updated' END,
           'system', c.email, c.external_id, c.id,
           jsonb_build_object('contact_id', c.id::text, 'email', c.email,
                              'external_id', c.external_id),
           now(), 'accepted', 0, now(), '', '', now()
    FROM c
)
SELECT id, email, external_id, fields, created_at, updated_at, created FROM c
"""


def _email(mode: str, tag: str, counter: Iterator[int]) -> str:
    if mode == "new":
        return f"{tag}-{next(counter)}@bench.example.com"
    return f"pool-{random.randrange(POOL)}@bench.example.com"


@dataclass(frozen=True)
class UpsertHttp:
    """Each call posts another upsert body on the client's keep-alive connection."""

    base_url: str
    key: str
    mode: str

    def open(self) -> Callable[[], bool]:
        tag, counter = uuid.uuid4().hex[:12], itertools.count()
        client: Any = None

        def call() -> bool:
            nonlocal client
            n = next(counter)
            body = {
                "email": _email(self.mode, tag, counter),
                "fields": {"plan": "pro", "n": n, "client": tag},
            }
            spec = HttpSpec.build(
                self.base_url,
                "/contacts/upsert",
                method="POST",
                headers={
                    "Authorization": f"Bearer {self.key}",
                    "Content-Type": "application/json",
                },
                body=json.dumps(body).encode(),
            )
            if client is None:
                client = spec.open()
            else:
                client.spec = spec
            return bool(client())

        return call


@dataclass(frozen=True)
class UpsertSql:
    """Each call runs `sql` (SAME_WORK_SQL or BASELINE_SQL) for another address or another
    field value."""

    dsn: str
    project_id: str
    mode: str
    sql: str = SAME_WORK_SQL

    def open(self) -> Callable[[], bool]:
        import psycopg

        conn = psycopg.connect(self.dsn, autocommit=True)
        cursor = conn.cursor()
        tag, counter = uuid.uuid4().hex[:12], itertools.count()

        def call() -> bool:
            n = next(counter)
            cursor.execute(
                self.sql,
                {
                    "id": uuid.uuid4(),
                    "event_id": uuid7(),
                    "project_id": self.project_id,
                    "email": _email(self.mode, tag, counter),
                    "set": json.dumps({"plan": "pro", "n": n, "client": tag}),
                },
            )
            cursor.fetchall()
            return True

        return call


def _measure(ctx: Context, spec: Any, clients: int) -> Measurement:
    measured = run_clients(
        spec,
        concurrency=clients,
        duration=ctx.settings.duration,
        processes=ctx.settings.client_processes,
    )
    if measured.errors:
        log(f"{measured.errors} errors, first: {measured.first_error}")
    return measured


def _seed_pool(ctx: Context, project_id: str) -> None:
    import psycopg

    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        conn.cursor().executemany(
            BASELINE_SQL,
            [
                {
                    "id": uuid.uuid4(),
                    "project_id": project_id,
                    "email": f"pool-{i}@bench.example.com",
                    "set": json.dumps({"plan": "free"}),
                }
                for i in range(POOL)
            ],
        )


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    key, project_id = keys["keys"]["project"], keys["project_id"]
    base_url = ctx.server().base_url
    check = urllib.request.Request(  # noqa: S310 - loopback
        f"{base_url}/contacts/upsert",
        data=json.dumps({"email": " Check@Bench.Example.com "}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(check, timeout=10) as response:  # noqa: S310 - loopback
        body = json.load(response)
    if body["data"]["email"] != "check@bench.example.com" or body["data"]["created"] is not True:
        raise RuntimeError(f"POST /contacts/upsert answered unexpectedly: {body}")
    _seed_pool(ctx, project_id)

    for mode in ("new", "existing"):
        for clients in CONCURRENCY:
            measured = _measure(ctx, UpsertHttp(base_url, key, mode), clients)
            baseline = _measure(ctx, UpsertSql(ctx.pg_dsn(), project_id, mode), clients)
            contact_only = _measure(
                ctx, UpsertSql(ctx.pg_dsn(), project_id, mode, BASELINE_SQL), clients
            )
            line = ctx.result(f"contacts_upsert_{mode}_c{clients}", measured, baseline)
            line["contact_only_ops_per_s"] = round(contact_only.ops_per_s, 1)
            line["contact_only_ratio"] = (
                round(measured.ops_per_s / contact_only.ops_per_s, 4)
                if contact_only.ops_per_s
                else None
            )
            yield ctx.with_ceiling(line, "events_ingest")
