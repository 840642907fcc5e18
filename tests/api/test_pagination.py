"""The shared cursor pagination (docs/API.md, Foundation: cursors), through GET /projects."""

import datetime as dt

import pytest
from django.core import signing

from tenancy.models import Project
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects(world):
    """The team's two projects plus eleven more: thirteen rows the team key reaches."""
    ProjectFactory.create_batch(11, team=world.team)
    return list(Project.objects.filter(team=world.team).order_by("created_at", "id"))


def list_projects(api, world, **params):
    return api.get("/projects", params, key=world.keys["team"])


def walk(api, world, limit):
    """Every page in order; returns the pages' bodies."""
    pages, after = [], None
    while True:
        params = {"limit": limit} if after is None else {"limit": limit, "after": after}
        response = list_projects(api, world, **params)
        assert response.status_code == 200, response.json()
        pages.append(response.json())
        after = pages[-1]["metadata"]["next"]
        if after is None:
            return pages


def ids(rows):
    return [row["id"] for row in rows]


def test_pages_return_every_item_exactly_once_in_created_order(api, world, projects):
    pages = walk(api, world, limit=3)

    seen = [item for page in pages for item in ids(page["data"])]
    assert seen == [str(p.id) for p in projects]
    assert [page["metadata"]["items"] for page in pages] == [3, 3, 3, 3, 1]


def test_metadata_describes_each_page(api, world, projects):
    pages = walk(api, world, limit=5)

    first, second, last = (page["metadata"] for page in pages)
    assert first == {
        "total": 13,
        "items": 5,
        "limit": 5,
        "after": None,
        "next": first["next"],
        "has_more": True,
    }
    assert isinstance(first["next"], str)
    assert second["after"] == first["next"], "after echoes the cursor the request sent"
    assert second["total"] == 13
    assert last == {
        "total": 13,
        "items": 3,
        "limit": 5,
        "after": second["next"],
        "next": None,
        "has_more": False,
    }


def test_the_default_page_holds_twenty(api, world):
    ProjectFactory.create_batch(23, team=world.team)

    metadata = list_projects(api, world).json()["metadata"]

    assert (metadata["limit"], metadata["items"], metadata["total"]) == (20, 20, 25)
    assert metadata["has_more"] is True


@pytest.mark.parametrize("limit", ["1", "100"])
def test_limits_at_the_bounds_are_accepted(api, world, projects, limit):
    response = list_projects(api, world, limit=limit)

    assert response.status_code == 200
    assert response.json()["metadata"]["items"] == min(int(limit), 13)


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "2.5", ""])
def test_a_limit_outside_1_to_100_is_a_validation_error_at_limit(api, world, limit):
    response = list_projects(api, world, limit=limit)

    body = response.json()
    assert response.status_code == 400
    assert body["error"]["code"] == "validation_error"
    assert [issue["path"] for issue in body["error"]["issues"]] == ["limit"]


def tampered(cursor):
    flipped = "A" if cursor[-1] != "A" else "B"
    return cursor[:-1] + flipped


@pytest.mark.parametrize(
    "make_cursor",
    [
        pytest.param(tampered, id="changed-signature"),
        pytest.param(lambda c: c.split(":")[0], id="signature-dropped"),
        pytest.param(lambda c: "garbage", id="garbage"),
        pytest.param(lambda c: "", id="empty"),
        pytest.param(lambda c: signing.dumps(["x", "y"]), id="signed-elsewhere"),
        pytest.param(lambda c: c.replace(c.split(":")[0], "WyJ4Il0"), id="payload-swapped"),
    ],
)
def test_a_cursor_that_was_not_issued_is_a_validation_error_at_after(
    api, world, projects, make_cursor
):
    cursor = list_projects(api, world, limit=2).json()["metadata"]["next"]

    response = list_projects(api, world, limit=2, after=make_cursor(cursor))

    body = response.json()
    assert response.status_code == 400, body
    assert body["error"]["code"] == "validation_error"
    assert [issue["path"] for issue in body["error"]["issues"]] == ["after"]


def test_rows_created_at_the_same_instant_are_ordered_by_id(api, world, projects):
    same = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    Project.objects.filter(team=world.team).update(created_at=same)

    pages = walk(api, world, limit=2)

    seen = [item for page in pages for item in ids(page["data"])]
    assert seen == sorted(str(p.id) for p in projects)
    assert len(set(seen)) == 13


def test_a_row_added_between_pages_does_not_shift_the_cursor(api, world, projects):
    first = list_projects(api, world, limit=4).json()
    ProjectFactory(team=world.team)

    second = list_projects(api, world, limit=4, after=first["metadata"]["next"]).json()

    assert ids(second["data"]) == [str(p.id) for p in projects[4:8]]
    assert second["metadata"]["total"] == 14


def test_a_page_costs_two_queries(api, world, projects, django_assert_num_queries):
    list_projects(api, world, limit=5)  # caches the key and records its use

    with django_assert_num_queries(2):
        response = list_projects(api, world, limit=5)

    assert response.status_code == 200
