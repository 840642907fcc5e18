"""Authenticated `GET /project` against a raw psycopg `SELECT` of the same project row."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context

CONCURRENCY = (1, 8, 32)


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
        yield ctx.result(f"project_get_c{clients}", measured, baseline)
