"""Concurrency against PostgreSQL: real threads, real connections, committed transactions."""

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from contacts.models import Contact
from events.models import Event
from tests.conftest import Api
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db(transaction=True)

SPELLINGS = ["race@example.com", " Race@Example.com", "RACE@EXAMPLE.COM ", "\trace@example.COM"]


def run_in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Runs `work(i)` in `count` threads released together; returns results in order."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def test_fifty_concurrent_api_upserts_of_one_address_create_exactly_one_contact(world):
    key = world.keys["project"]
    Api().post("/contacts/upsert", {"email": "warm@example.com"}, key=key)  # caches the key

    def upsert(index: int) -> tuple[int, dict]:
        response = Api().post(
            "/contacts/upsert",
            {"email": SPELLINGS[index % len(SPELLINGS)], "fields": {f"k{index}": index}},
            key=key,
        )
        return response.status_code, response.json()["data"]

    results = run_in_threads(50, upsert)
    contacts = Contact.objects.filter(project=world.project, email="race@example.com")
    assert contacts.count() == 1
    contact = contacts.get()
    assert [data["created"] for _, data in results].count(True) == 1
    assert sorted(status for status, _ in results) == [200] * 49 + [201]
    assert {data["id"] for _, data in results} == {str(contact.id)}
    # Every request's field survived: merges are made on the locked row.
    assert contact.fields == {f"k{i}": i for i in range(50)}
    assert Event.objects.filter(event="sendrealm.contact.created", contact=contact).count() == 1
    assert Event.objects.filter(event="sendrealm.contact.updated", contact=contact).count() == 49


def test_concurrent_patches_and_upserts_of_one_contact_lose_no_field(world):
    contact = ContactFactory(project=world.project, email="busy@example.com", fields={"base": 0})
    key = world.keys["project"]
    Api().get("/contacts", key=key)

    def change(index: int) -> int:
        if index % 3 == 0:
            response = Api().post(
                "/contacts/upsert",
                {"email": "BUSY@example.com", "fields": {f"u{index}": index}},
                key=key,
            )
        else:
            response = Api().patch(
                f"/contacts/{contact.id}", {"fields": {f"p{index}": index}}, key=key
            )
        return response.status_code

    statuses = run_in_threads(30, change)
    assert set(statuses) == {200}
    contact.refresh_from_db()
    expected = {"base": 0} | {(f"u{i}" if i % 3 == 0 else f"p{i}"): i for i in range(30)}
    assert contact.fields == expected
    assert Event.objects.filter(event="sendrealm.contact.updated", contact=contact).count() == 30


def test_fifty_concurrent_identical_upserts_of_a_new_address_record_one_event(world):
    key = world.keys["project"]
    Api().post("/contacts/upsert", {"email": "warm@example.com"}, key=key)  # caches the key

    def upsert(index: int) -> tuple[int, dict]:
        response = Api().post(
            "/contacts/upsert",
            {"email": SPELLINGS[index % len(SPELLINGS)], "fields": {"plan": "pro"}},
            key=key,
        )
        return response.status_code, response.json()["data"]

    results = run_in_threads(50, upsert)
    contact = Contact.objects.get(project=world.project, email="race@example.com")
    assert sorted(status for status, _ in results) == [200] * 49 + [201]
    assert {data["id"] for _, data in results} == {str(contact.id)}
    assert all(data["fields"] == {"plan": "pro"} for _, data in results)
    # The first creates it; the 49 others change nothing, so record nothing.
    events = Event.objects.filter(contact=contact).values_list("event", flat=True)
    assert list(events) == ["sendrealm.contact.created"]
