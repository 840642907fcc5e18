"""Concurrent adds of one address against PostgreSQL: real threads and connections."""

import pytest

from messaging.models import Suppression
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)

SPELLINGS = ["race@example.com", " Race@Example.com", "RACE@EXAMPLE.COM ", "race@EXAMPLE.com"]


def test_twenty_concurrent_adds_of_one_address_make_one_entry(world):
    key = world.keys["project"]
    Api().get("/suppressions", key=key)  # caches the key

    def add(index: int) -> tuple[int, dict]:
        response = Api().post(
            "/suppressions",
            {"email": SPELLINGS[index % len(SPELLINGS)], "reason": "bounce"},
            key=key,
        )
        return response.status_code, response.json()["data"]

    results = run_in_threads(20, add)

    assert Suppression.objects.filter(project=world.project).count() == 1
    assert sorted(status for status, _ in results) == [200] * 19 + [201]
    assert {data["email"] for _, data in results} == {"race@example.com"}
    assert len({data["created_at"] for _, data in results}) == 1
