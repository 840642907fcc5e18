"""The API served by granian through a real PgBouncer in transaction mode
(tests/pgbouncer.py), with fewer server connections than clients, so clients take turns
on the same server connections. With DATABASE_POOLER=transaction every path that asks for
a statement prepared on the server works from many threads at once: the personal key's
grant read, the contact upsert, the contact read by id and the event insert. Without it,
a client's prepared statement stays on a server connection that the next client, which
names its own the same, then gets."""

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from contacts.selectors import _GET_BY_ID
from tenancy.models import Role
from tests.pgbouncer import PgBouncer, requires_pgbouncer
from tests.processes import wait_for
from tests.test_server import Granian

pytestmark = [pytest.mark.django_db(transaction=True), requires_pgbouncer]

ROUNDS = 16
THREADS = 8
# Fewer server connections than granian's clients: its threads (SERVER_THREADS, 4), each
# on a connection of its own per request (the test settings keep none).
POOL_SIZE = 2


def _test_database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


@pytest.fixture
def bouncer(tmp_path: Path) -> Iterator[PgBouncer]:
    bouncer = PgBouncer(_test_database_url(), tmp_path, pool_size=POOL_SIZE)
    with bouncer:
        yield bouncer
    print(bouncer.log.read_text())  # shown when the test failed


def served(tmp_path: Path, bouncer: PgBouncer, **environment: str) -> Granian:
    """granian on the test database through `bouncer`."""
    server = Granian(tmp_path, workers=1, environment={"DATABASE_URL": bouncer.url, **environment})
    wait_for(server.healthy, timeout=60, what="granian answering /health through PgBouncer")
    return server


def one_round(base_url: str, world, n: int) -> list[tuple[str, int, str]]:
    """A contact upserted and read back with the owner's personal key, and an event sent
    with the project key: (what, status, body) of each call."""
    personal = {
        "Authorization": f"Bearer {world.keys[f'personal_{Role.OWNER}']}",
        "X-Service-Project-Id": str(world.project.id),
    }
    email = f"pooled-{n}-{uuid.uuid4().hex[:8]}@example.com"
    outcomes = []
    with httpx.Client(base_url=base_url, timeout=30) as http:
        upsert = http.post(
            "/contacts/upsert", json={"email": email, "fields": {"n": n}}, headers=personal
        )
        outcomes.append(("upsert", upsert.status_code, upsert.text))
        if upsert.status_code in (200, 201):
            read = http.get(f"/contacts/{upsert.json()['data']['id']}", headers=personal)
            outcomes.append(("read", read.status_code, read.text))
        event = http.post(
            "/events",
            json={"event": "pooled.sent", "email": email, "idempotency_key": f"k-{n}"},
            headers={"Authorization": f"Bearer {world.keys['project']}"},
        )
        outcomes.append(("event", event.status_code, event.text))
    return outcomes


def rounds(base_url: str, world) -> list[tuple[str, int, str]]:
    with ThreadPoolExecutor(THREADS) as pool:
        done = pool.map(lambda n: one_round(base_url, world, n), range(ROUNDS))
        return [outcome for outcomes in done for outcome in outcomes]


def test_with_database_pooler_transaction_every_prepared_path_works_through_pgbouncer(
    world, bouncer, tmp_path
):
    server = served(tmp_path, bouncer, DATABASE_POOLER="transaction")
    try:
        outcomes = rounds(server.base_url, world)
    finally:
        server.stop()

    failed = [outcome for outcome in outcomes if outcome[1] not in (200, 201, 202)]
    assert not failed, f"{failed[:3]}\n{server.log.read_text()}"
    assert sorted({what for what, _, _ in outcomes}) == ["event", "read", "upsert"]
    assert len(outcomes) == 3 * ROUNDS
    # The clients did take turns on fewer server connections than they were.
    [pool] = [row for row in bouncer.show("POOLS") if row["database"] == world_db()]
    assert pool["sv_active"] + pool["sv_idle"] + pool["sv_used"] <= POOL_SIZE
    stats = {row["database"]: row for row in bouncer.show("STATS")}[world_db()]
    assert stats["total_xact_count"] >= 3 * ROUNDS


def test_without_it_a_prepared_statement_is_left_to_the_next_client_of_its_server_connection(
    tmp_path,
):
    """What DATABASE_POOLER=transaction avoids: two clients, one server connection. The
    first prepares the contact read (psycopg names it `_pg3_0` on its connection), and the
    second, preparing its own under the same name, finds the first's on the server."""
    with PgBouncer(_test_database_url(), tmp_path, pool_size=1) as url:
        first = psycopg.connect(url, autocommit=True)
        second = psycopg.connect(url, autocommit=True)
        try:
            params = [uuid.uuid4(), uuid.uuid4()]
            assert first.execute(_GET_BY_ID, params, prepare=True).fetchall() == []
            with pytest.raises(psycopg.errors.DuplicatePreparedStatement, match="_pg3_0"):
                second.execute(_GET_BY_ID, params, prepare=True)
            # Not prepared, it runs on the same server connection.
            assert second.execute(_GET_BY_ID, params, prepare=False).fetchall() == []
        finally:
            first.close()
            second.close()


def world_db() -> str:
    return str(connection.settings_dict["NAME"])
