"""The upsert benchmark's baseline is the API's work done by hand: its statement writes the
contact and the event row the API writes for the same upsert."""

import pytest
from django.db import connection
from psycopg.conninfo import make_conninfo

from bench import bench_contacts
from bench.bench_contacts import UpsertSql
from contacts.models import Contact
from events.models import Event

pytestmark = pytest.mark.django_db(transaction=True)


def _dsn() -> str:
    """The test database's connection string, for the baseline's own connection."""
    params = connection.get_connection_params()
    keys = ("host", "port", "user", "password", "dbname")
    return make_conninfo(**{key: params[key] for key in keys if params.get(key)})


# What differs from one event to the next: its id, its contact and when it was written.
_OWN = {"id", "contact_id", "email", "payload", "occurred_at", "next_attempt_at", "created_at"}


def _event_columns(event: Event) -> dict[str, object]:
    return {
        field.attname: getattr(event, field.attname)
        for field in Event._meta.concrete_fields
        if field.attname not in _OWN
    }


@pytest.mark.parametrize("mode", ["new", "existing"])
def test_the_same_work_baseline_writes_the_contact_and_the_event_the_api_writes(
    api, world, mode, monkeypatch
):
    project_id = str(world.project.id)
    if mode == "existing":
        # One contact in the pool, so the baseline changes that one.
        monkeypatch.setattr(bench_contacts, "POOL", 1)
        api.post(
            "/contacts/upsert",
            {"email": "pool-0@bench.example.com"},
            key=world.keys["project"],
        )
        Event.objects.all().delete()
    by_api = api.post(
        "/contacts/upsert",
        {"email": "api@bench.example.com", "fields": {"plan": "pro"}},
        key=world.keys["project"],
    ).json()["data"]
    [api_event] = Event.objects.filter(contact_id=by_api["id"])

    call = UpsertSql(_dsn(), project_id, mode).open()
    assert call()
    by_hand = Contact.objects.exclude(email="api@bench.example.com").get()
    [hand_event] = Event.objects.filter(contact_id=by_hand.id)

    expected_name = "created" if mode == "new" else "updated"
    assert hand_event.event == f"sendrealm.contact.{expected_name}"
    assert _event_columns(hand_event) == {
        **_event_columns(api_event),
        "event": f"sendrealm.contact.{expected_name}",
    }
    assert hand_event.payload == {
        "contact_id": str(by_hand.id),
        "email": by_hand.email,
        "external_id": None,
    }
    assert hand_event.id.version == 7
