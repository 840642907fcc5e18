"""Who may reach which project and do what: every key kind against every project header.

GET /project needs `resources.read`; PATCH /project needs `resources.write` and managing
rights (a full-access integration key, or a personal key of an owner or admin).
"""

import uuid

import pytest

from tenancy.access import ALL_SCOPES, hash_secret
from tenancy.cache import is_cached
from tenancy.models import ApiKey, KeyKind, Membership, Role, Scope
from tenancy.selectors import key_cache_name
from tenancy.services import api_key_create, api_key_revoke
from tests.processes import free_port

pytestmark = pytest.mark.django_db

HEADERS = ("absent", "own", "other", "foreign", "nonexistent", "malformed")

# The answer per project header above, in that order. M, S, F: 200 acting on the main,
# second or foreign project; 400p: project_required; 400v: validation_error.
DENIED = "403 403 403 403 403 400v"
UNAUTHENTICATED = "401 401 401 401 401 401"
MATRIX: dict[str, tuple[str, str]] = {
    # Per key kind, the answers of GET /project and of PATCH /project:
    "project": ("M M 403 403 403 400v", "M M 403 403 403 400v"),
    "team": ("M M S 403 403 400v", "M M S 403 403 400v"),
    "team_selected": ("M M 403 403 403 400v", "M M 403 403 403 400v"),
    "personal_owner": ("400p M S 403 403 400v", "400p M S 403 403 400v"),
    "personal_admin": ("400p M S 403 403 400v", "400p M S 403 403 400v"),
    "personal_member": ("400p M S 403 403 400v", "400p 403 403 403 403 400v"),
    "personal_viewer": ("400p M S 403 403 400v", "400p 403 403 403 403 400v"),
    "personal_outsider": ("400p 403 403 F 403 400v", "400p 403 403 F 403 400v"),
    "read_only": ("M M 403 403 403 400v", DENIED),
    "sending": (DENIED, DENIED),
    "revoked": (UNAUTHENTICATED, UNAUTHENTICATED),
    "unknown": (UNAUTHENTICATED, UNAUTHENTICATED),
    "malformed_authorization": (UNAUTHENTICATED, UNAUTHENTICATED),
    "basic_authorization": (UNAUTHENTICATED, UNAUTHENTICATED),
    "bearer_without_key": (UNAUTHENTICATED, UNAUTHENTICATED),
    "missing": (UNAUTHENTICATED, UNAUTHENTICATED),
}

ERROR_CODES = {
    "400p": (400, "project_required"),
    "400v": (400, "validation_error"),
    "401": (401, "unauthenticated"),
    "403": (403, "forbidden"),
}

CASES = [
    pytest.param(key, method, header, outcome, id=f"{key}-{method}-{header}")
    for key, answers in MATRIX.items()
    for method, row in zip(("GET", "PATCH"), answers, strict=True)
    for header, outcome in zip(HEADERS, row.split(), strict=True)
]


def authorization(world, name):
    """The Authorization header a persona sends (None: no header at all)."""
    if name in world.keys:
        return f"Bearer {world.keys[name]}"
    if name == "revoked":
        key, secret = api_key_create(
            team=world.team, kind=KeyKind.PROJECT, name="revoked", project=world.project
        )
        api_key_revoke(api_key=key)
        return f"Bearer {secret}"
    return {
        "unknown": "Bearer sr_" + "x" * 43,
        "malformed_authorization": f"Token {world.keys['project']}",
        "basic_authorization": "Basic dXNlcjpwYXNz",
        "bearer_without_key": "Bearer",
        "missing": None,
    }[name]


def project_header(world, header):
    return {
        "absent": None,
        "own": str(world.project.id),
        "other": str(world.other_project.id),
        "foreign": str(world.foreign_project.id),
        "nonexistent": str(uuid.uuid4()),
        "malformed": "not-a-uuid",
    }[header]


@pytest.mark.parametrize(("key", "method", "header", "outcome"), CASES)
def test_the_key_reaches_exactly_what_its_kind_and_rights_allow(
    api, world, key, method, header, outcome
):
    headers = {}
    if (value := authorization(world, key)) is not None:
        headers["Authorization"] = value
    if (value := project_header(world, header)) is not None:
        headers["X-Service-Project-Id"] = value
    body = {"policies": {"event_retention_days": 30}} if method == "PATCH" else None

    response = api.request(method, "/project", body, headers=headers)

    payload = response.json()
    assert payload["status"] == response.status_code
    if outcome in ERROR_CODES:
        status, code = ERROR_CODES[outcome]
        assert (response.status_code, payload["error"]["code"]) == (status, code), payload
        assert "data" not in payload
        if outcome == "400v":
            assert [i["path"] for i in payload["error"]["issues"]] == ["X-Service-Project-Id"]
        if status == 401:
            assert response["WWW-Authenticate"] == "Bearer"
        return
    expected = {"M": world.project, "S": world.other_project, "F": world.foreign_project}[outcome]
    assert response.status_code == 200, payload
    assert payload["data"]["id"] == str(expected.id)
    if method == "PATCH":
        assert payload["data"]["policies"]["event_retention_days"] == 30
        expected.refresh_from_db()
        assert expected.event_retention_days == 30


def personal_key(world, *, role=Role.OWNER, scopes=ALL_SCOPES, grants=None):
    """A fresh personal key of the member with `role`; grants default to every scope on Main."""
    grants = {world.project: ALL_SCOPES} if grants is None else grants
    return api_key_create(
        team=world.team,
        kind=KeyKind.PERSONAL,
        name="personal",
        user=world.users[role],
        scopes=scopes,
        grants=grants,
    )


def test_a_personal_key_acts_with_no_scope_its_saved_grant_lacks(api, world):
    _, secret = personal_key(world, grants={world.project: [Scope.RESOURCES_WRITE]})

    read = api.get("/project", key=secret, project=world.project.id)
    write = api.patch("/project", {"name": "Renamed"}, key=secret, project=world.project.id)

    assert (read.status_code, read.json()["error"]["code"]) == (403, "forbidden")
    assert "resources.read" in read.json()["error"]["message"]
    assert write.status_code == 200
    assert write.json()["data"]["name"] == "Renamed"


def test_a_personal_key_acts_with_no_scope_it_was_not_given(api, world):
    _, secret = personal_key(world, scopes=[Scope.RESOURCES_WRITE])

    response = api.get("/project", key=secret, project=world.project.id)

    assert response.status_code == 403


def test_a_personal_key_cannot_reach_a_project_it_has_no_grant_on(api, world):
    _, secret = personal_key(world, grants={world.project: ALL_SCOPES})

    granted = api.get("/project", key=secret, project=world.project.id)
    not_granted = api.get("/project", key=secret, project=world.other_project.id)

    assert granted.status_code == 200
    assert (not_granted.status_code, not_granted.json()["error"]["code"]) == (403, "forbidden")


def test_the_users_current_role_applies_not_the_role_when_the_key_was_made(api, world):
    secret = world.keys["personal_owner"]
    before = api.patch("/project", {"name": "As owner"}, key=secret, project=world.project.id)
    assert before.status_code == 200

    Membership.objects.filter(team=world.team, user=world.users[Role.OWNER]).update(
        role=Role.VIEWER
    )

    write = api.patch("/project", {"name": "As viewer"}, key=secret, project=world.project.id)
    read = api.get("/project", key=secret, project=world.project.id)
    assert (write.status_code, write.json()["error"]["code"]) == (403, "forbidden")
    assert read.status_code == 200
    assert read.json()["data"]["name"] == "As owner"


def test_a_user_who_left_the_team_loses_access_with_the_key(api, world):
    secret = world.keys["personal_member"]
    assert api.get("/project", key=secret, project=world.project.id).status_code == 200

    Membership.objects.filter(team=world.team, user=world.users[Role.MEMBER]).delete()

    response = api.get("/project", key=secret, project=world.project.id)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")


def test_a_deactivated_users_personal_keys_stop_working(api, world):
    secret = world.keys["personal_admin"]
    assert api.get("/project", key=secret, project=world.project.id).status_code == 200
    world.users[Role.ADMIN].is_active = False
    world.users[Role.ADMIN].save(update_fields=["is_active"])

    response = api.get("/project", key=secret, project=world.project.id)
    listing = api.get("/projects", key=secret)

    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")
    assert listing.json()["data"] == []


def test_revocation_takes_effect_on_the_next_request(api, world):
    key, secret = api_key_create(
        team=world.team, kind=KeyKind.PROJECT, name="to revoke", project=world.project
    )
    assert api.get("/project", key=secret).status_code == 200
    assert is_cached(key_cache_name(key.secret_hash)), "the key record is cached"

    api_key_revoke(api_key=key)

    response = api.get("/project", key=secret)
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthenticated")


def test_a_team_key_without_a_default_project_must_name_one(api, world):
    _, secret = api_key_create(
        team=world.team, kind=KeyKind.TEAM, name="no default", all_projects=True
    )

    without = api.get("/project", key=secret)
    with_header = api.get("/project", key=secret, project=world.other_project.id)

    assert (without.status_code, without.json()["error"]["code"]) == (400, "project_required")
    assert with_header.json()["data"]["id"] == str(world.other_project.id)


def test_use_of_a_key_is_recorded(api, world, clock):
    key, secret = api_key_create(
        team=world.team, kind=KeyKind.PROJECT, name="used", project=world.project
    )
    assert key.last_used_at is None

    api.get("/project", key=secret)

    key.refresh_from_db()
    assert key.last_used_at == clock.current


def test_use_is_written_at_most_once_a_minute_per_key(api, world, clock, django_assert_num_queries):
    secret = world.keys["project"]
    api.get("/project", key=secret)
    first = ApiKey.objects.get(secret_hash=hash_secret(secret)).last_used_at
    clock.advance(seconds=30)

    # Cached key and project, no write: the hot path does not touch the database.
    with django_assert_num_queries(0):
        assert api.get("/project", key=secret).status_code == 200

    assert ApiKey.objects.get(secret_hash=hash_secret(secret)).last_used_at == first


def test_use_is_recorded_and_the_request_served_while_the_shared_cache_is_down(
    api, world, settings
):
    key, secret = api_key_create(
        team=world.team, kind=KeyKind.PROJECT, name="cache down", project=world.project
    )
    # A port nothing listens on: every call to the shared cache fails to connect.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }

    response = api.get("/project", key=secret)

    assert response.status_code == 200
    key.refresh_from_db()
    assert key.last_used_at is not None
