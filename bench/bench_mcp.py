"""The MCP tool `contacts_get` against the REST call it stands for, `GET /contacts/{id}`,
at 8 clients, in the same run with the same personal key and contact.

An MCP client of this stateless server sends each call as one `POST /mcp` (no session to
open first), so each client repeats that POST on its keep-alive connection: once as a
2025-11-25 client after its handshake, once with the 2026-07-28 per-request envelope. The
REST line is measured against a raw psycopg `SELECT` of the row; the MCP lines against the
REST line (`ratio` = tool calls per REST call, the median of the rounds' ratios; see
ROUNDS).

Both lines are served by a server of their own whose rate limit is far above the load:
one key makes every request, and at the default (1,000 requests per second per key) a
quiet machine's REST line is refused in part. Refused requests (429) are not counted,
and, while a tool call still counted twice, one whose REST call the limiter refused
answered 200 with a cheap error result, which was: the ratio measured the limiter. The
limiter still runs on every request of both lines.

Every line also has `ceiling_ratio` against the nearest lean read, the project-get ceiling
at 8 clients (`ceiling_project_get_c8`, bench/ceiling.py: one key checked in memory, one
prepared SELECT of a row by id).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from typing import Any

from bench.harness import Context, Server
from bench.loadgen import Measurement

CLIENTS = 8
MCP_ACCEPT = "application/json, text/event-stream"
LIMIT = {"API_RATE_LIMIT": "1000000"}
# A round is one turn of REST and of each MCP client, back to back, each round starting
# with the next of the three. A turn on two shared cores moves by up to 30 % from one to
# the next: each round's ratios compare turns seconds apart, and the ratio reported is the
# median of the rounds'.
ROUNDS = int(os.environ.get("BENCH_MCP_ROUNDS", "6"))
TURN_SECONDS = float(os.environ.get("BENCH_MCP_TURN", "3"))


def _call(base_url: str, path: str, key: str, body: Any, headers: dict[str, str]) -> Any:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{base_url}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json", **headers},
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        return json.load(response)


def _tool_call(arguments: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "contacts_get", "arguments": arguments}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    server = Server(ctx.settings)
    server.env.update(LIMIT)
    server.start()
    try:
        yield from _measure(ctx, server, keys)
    finally:
        server.stop()


def _measure(ctx: Context, server: Server, keys: dict[str, Any]) -> Iterator[dict[str, Any]]:
    key, project_id = keys["keys"]["personal"], keys["project_id"]
    base_url = server.base_url
    project = {"X-Service-Project-Id": project_id}
    contact = _call(base_url, "/contacts/upsert", key, {"email": "mcp@bench.example.com"}, project)[
        "data"
    ]
    rest_path = f"/contacts/{contact['id']}"
    rest = _call(base_url, rest_path, key, None, project)["data"]
    arguments = {"project_id": project_id, "contact_id": contact["id"]}
    handshake = {"Accept": MCP_ACCEPT, "MCP-Protocol-Version": "2025-11-25"}
    # The 2026 revision also routes by headers that repeat the method and the tool.
    envelope = {
        "Accept": MCP_ACCEPT,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "contacts_get",
    }
    variants = {
        "2025": (handshake, _tool_call(arguments, modern=False)),
        "2026": (envelope, _tool_call(arguments, modern=True)),
    }
    for name, (headers, body) in variants.items():
        answer = _call(base_url, "/mcp", key, body, headers)["result"]
        if answer.get("isError") or answer.get("structuredContent") != rest:
            raise RuntimeError(f"contacts_get ({name}) answered unexpectedly: {answer}")

    def turn(name: str, seconds: float = TURN_SECONDS) -> Measurement:
        if name == "rest":
            return ctx.http(
                rest_path,
                key=key,
                project=project_id,
                concurrency=CLIENTS,
                duration=seconds,
                server=server,
            )
        headers, body = variants[name]
        return ctx.http(
            "/mcp",
            method="POST",
            key=key,
            body=body,
            headers=headers,
            concurrency=CLIENTS,
            duration=seconds,
            server=server,
        )

    names = ["rest", *variants]
    # Every worker connected and warm before anything counts.
    for name in names:
        turn(name, 1.0)
    measured: dict[str, list[Measurement]] = {name: [] for name in names}
    for round_ in range(ROUNDS):
        # Each round starts with another of the three.
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            measured[name].append(turn(name))
    rest = Measurement.joined(measured["rest"])
    baseline = ctx.sql(
        "SELECT * FROM contacts_contact WHERE id = %s AND project_id = %s AND deleted_at IS NULL",
        (contact["id"], project_id),
        concurrency=CLIENTS,
    )
    yield ctx.with_ceiling(ctx.result(f"contacts_get_c{CLIENTS}", rest, baseline), "project_get")
    for name in variants:
        line = ctx.result_in_rounds(
            f"mcp_contacts_get_{name}_c{CLIENTS}", measured[name], measured["rest"]
        )
        yield ctx.with_ceiling(line, "project_get")
