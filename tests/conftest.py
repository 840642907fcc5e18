"""Personas, keys, the API client and the controllable clock shared by every test."""

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connections, transaction
from django.test import TransactionTestCase
from rest_framework.test import APIClient

from config.runtime import clock as service_clock
from tenancy.access import ALL_SCOPES
from tenancy.cache import forget_local
from tenancy.models import KeyKind, Permission, Project, Role, Team
from tenancy.services import api_key_create
from tests.factories import MembershipFactory, ProjectFactory, TeamFactory, UserFactory


class Api:
    """The DRF test client with the key and project header as arguments."""

    def __init__(self) -> None:
        self.client = APIClient()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = None,
        project: Any = None,
        raw: str | bytes | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> Any:
        all_headers: dict[str, str] = dict(headers or {})
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        if project is not None:
            all_headers["X-Service-Project-Id"] = str(project)
        kwargs: dict[str, Any] = {"headers": all_headers, **extra}
        if raw is not None:
            kwargs["data"] = raw
            kwargs["content_type"] = "application/json"
        elif body is not None:
            if method.upper() == "GET":
                kwargs["data"] = body
            else:
                kwargs["data"] = json.dumps(body)
                kwargs["content_type"] = "application/json"
        return getattr(self.client, method.lower())(path, **kwargs)

    def get(self, path: str, params: Any = None, **kw: Any) -> Any:
        return self.request("GET", path, params, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PATCH", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, body, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("DELETE", path, body, **kw)


# What a test that touches the test database asks for (pytest-django's fixtures).
_DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "live_server",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
    }
)


def _uses_database(item: pytest.Item) -> bool:
    return item.get_closest_marker("django_db") is not None or not _DATABASE_FIXTURES.isdisjoint(
        getattr(item, "fixturenames", ())
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that use no database run first, then pytest-django's order (the database
    tests, then the transactional ones). Many of those that use none start real processes
    (`make run`'s stack, the embedded servers, granian) and take the longest; at the end,
    the one still running left the other xdist workers idle. They cannot be affected by what
    the database tests leave behind, nor the reverse, so the order changes no outcome."""
    items.sort(key=_uses_database)


@pytest.fixture
def api() -> Api:
    return Api()


@dataclass
class World:
    """A team with two projects, its members by role, a foreign team, and keys of each kind."""

    team: Team
    project: Project
    other_project: Project
    foreign_project: Project
    users: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def world(db: Any) -> World:
    team = TeamFactory(messaging_rollout=True)
    project = ProjectFactory(team=team, name="Main")
    other_project = ProjectFactory(team=team, name="Second")
    foreign_project = ProjectFactory(name="Foreign")
    w = World(
        team=team, project=project, other_project=other_project, foreign_project=foreign_project
    )

    def key(**kwargs: Any) -> str:
        kwargs.setdefault("team", team)
        return api_key_create(name="test key", **kwargs)[1]

    for role in (Role.OWNER, Role.ADMIN, Role.MEMBER, Role.VIEWER):
        user = UserFactory(username=f"{role}@example.com")
        MembershipFactory(team=team, user=user, role=role)
        w.users[role] = user
        w.keys[f"personal_{role}"] = key(
            kind=KeyKind.PERSONAL,
            user=user,
            scopes=ALL_SCOPES,
            grants={project: ALL_SCOPES, other_project: ALL_SCOPES},
        )
    outsider = UserFactory(username="outsider@example.com")
    MembershipFactory(team=foreign_project.team, user=outsider, role=Role.OWNER)
    w.users["outsider"] = outsider
    w.keys["personal_outsider"] = key(
        team=foreign_project.team,
        kind=KeyKind.PERSONAL,
        user=outsider,
        scopes=ALL_SCOPES,
        grants={foreign_project: ALL_SCOPES},
    )
    w.keys["project"] = key(kind=KeyKind.PROJECT, project=project)
    w.keys["read_only"] = key(
        kind=KeyKind.PROJECT, project=project, permission=Permission.READ_ONLY
    )
    w.keys["sending"] = key(
        kind=KeyKind.PROJECT, project=project, permission=Permission.SENDING_ACCESS
    )
    w.keys["other_project"] = key(kind=KeyKind.PROJECT, project=other_project)
    w.keys["team"] = key(kind=KeyKind.TEAM, project=project, all_projects=True)
    w.keys["team_selected"] = key(kind=KeyKind.TEAM, project=project, projects=[project])
    w.keys["foreign"] = key(
        team=foreign_project.team, kind=KeyKind.PROJECT, project=foreign_project
    )
    return w


class Clock:
    """A service clock that only moves when the test moves it."""

    def __init__(self, start: dt.datetime) -> None:
        self.current = start

    def __call__(self) -> dt.datetime:
        return self.current

    def set(self, moment: dt.datetime) -> None:
        self.current = moment

    def advance(self, **delta: float) -> dt.datetime:
        self.current += dt.timedelta(**delta)
        return self.current


@pytest.fixture
def clock() -> Iterator[Clock]:
    fake = Clock(dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC))
    service_clock.set_source(fake)
    yield fake
    service_clock.set_source(None)


# What migrate's post_migrate handlers write (content types and permissions): the same
# rows for every test, which Django's flush empties only to write them again.
_KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


def _delete_all_rows(self: TransactionTestCase) -> None:
    """Ends a transactional test (`django_db(transaction=True)`) by deleting what it wrote.
    Django's flush truncates every table and then re-creates the content types and
    permissions: TRUNCATE replaces the files of every table and index, over a second on a
    PostgreSQL that syncs to disk, where DELETE of the few rows a test wrote takes
    milliseconds. One transaction, in which every foreign key (and the email's reference
    triggers) is checked at commit, so the order of the tables does not matter."""
    for alias in self._databases_names(include_mirrors=False):
        connection = connections[alias]
        tables = connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            for table in tables:
                if table not in _KEPT_BY_FLUSH:
                    cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")  # noqa: S608


_flush = TransactionTestCase._fixture_teardown


def _fixture_teardown(self: TransactionTestCase) -> None:
    # Tests that ask for more than empty tables get Django's own flush.
    if self.available_apps is not None or self.reset_sequences or self.serialized_rollback:
        _flush(self)
    else:
        _delete_all_rows(self)


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", _fixture_teardown)
        yield


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    """Keys and projects are cached in Redis; each test starts with none of them cached."""
    cache.clear()
    forget_local()
    yield
    cache.clear()
    forget_local()
