"""Authenticated `GET /project` against a raw psycopg `SELECT` of the same project row, with
`ceiling_ratio` against `ceiling_project_get_c{N}` (bench/ceiling.py: the same request and
SELECT with no framework, served by the same server, bench/ceiling_front.py), measured
beside it and printed as its own line against the same raw baseline. At 8 clients the
ceiling is measured on granian's WSGI interface too (`ceiling_wsgi_project_get_c8`, and
`wsgi_ceiling_ratio` on the API's line)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context

CONCURRENCY = (1, 8, 32)
# Where the ceiling is measured on granian's WSGI interface too (`ceiling_wsgi_*`).
WSGI_CEILING_CONCURRENCY = (8,)


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    key, project_id = keys["keys"]["project"], keys["project_id"]
    check = urllib.request.Request(  # noqa: S310 - loopback
        f"{ctx.server().base_url}/project", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(check, timeout=10) as response:  # noqa: S310 - loopback
        body = json.load(response)
    if body["data"]["id"] != project_id:
        raise RuntimeError(f"GET /project answered another project: {body}")

    for clients in CONCURRENCY:
        measured = ctx.http("/project", key=key, concurrency=clients)
        baseline = ctx.sql(
            "SELECT * FROM tenancy_project WHERE id = %s", (project_id,), concurrency=clients
        )
        ceilings = [ctx.ceiling_line("project_get", clients, baseline)]
        if clients in WSGI_CEILING_CONCURRENCY:
            ceilings.append(ctx.ceiling_line("project_get", clients, baseline, interface="wsgi"))
        yield ctx.with_ceiling(
            ctx.result(f"project_get_c{clients}", measured, baseline), "project_get"
        )
        yield from ceilings
