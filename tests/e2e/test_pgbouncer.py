"""The production topology through Debian's PgBouncer in transaction mode
(DATABASE_POOLER=transaction): granian's and the Celery workers' connections take turns on
fewer server connections, and the paths that would prepare statements on the server on a
direct connection work from many clients at once (a personal key's grant read, the
contact upsert and read, the event insert), as do the workers that process the events.
The main automation path runs on it too (tests/e2e/test_automations.py)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.client import Api, unique, until
from tests.e2e.stack import PgBouncerStack, Stack

CLIENTS = 6
ROUNDS = 12


def one_round(topology: Stack, n: int) -> tuple[str, str, str]:
    """A contact upserted and read back with the personal key, then an event sent for it
    with the project key: (email, event name, idempotency key)."""
    personal = Api(topology.base_url, topology.key("personal"), project_id=topology.project_id)
    project = Api(topology.base_url, topology.key("project"))
    try:
        email = unique(f"pooled-{n}-") + "@example.com"
        contact_id = personal.contact(email, round=n)
        assert personal.get(f"/contacts/{contact_id}")["fields"] == {"round": n}
        name = unique("pooled.")
        return email, name, project.event(name, email, round=n)
    finally:
        personal.http.close()
        project.http.close()


def processed(api: Api, name: str, email: str, key: str) -> None:
    until(lambda: api.event_status(name, email, key) == "processed", f"{name} processed")


@pytest.mark.parametrize("topology", ["production_pgbouncer"], indirect=True)
def test_many_clients_through_pgbouncer_upsert_read_and_send_events_that_workers_process(
    topology, api
):
    with ThreadPoolExecutor(CLIENTS) as pool:
        sent = list(pool.map(lambda n: one_round(topology, n), range(ROUNDS)))

    for email, name, key in sent:
        processed(api, name, email, key)
    assert isinstance(topology, PgBouncerStack)
    assert topology.bouncer is not None
    [pool_row] = [
        row for row in topology.bouncer.show("POOLS") if row["database"] == topology.database
    ]
    servers = (
        pool_row["sv_active"] + pool_row["sv_idle"] + pool_row["sv_used"] + pool_row["sv_tested"]
    )
    assert servers <= PgBouncerStack.POOL_SIZE
    clients = [
        row for row in topology.bouncer.show("CLIENTS") if row["database"] == topology.database
    ]
    assert len(clients) > PgBouncerStack.POOL_SIZE, "the processes hold more clients than servers"
