"""The staff console creates keys that show their secret once, and revokes them."""

import json
import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission as AuthPermission
from django.contrib.messages import get_messages

from tenancy.access import hash_secret
from tenancy.models import ApiKey, KeyKind, Permission, Role
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/tenancy/apikey/add/"
CHANGELIST_URL = "/admin/tenancy/apikey/"
SECRET = re.compile(r"sr_(?:user_)?[A-Za-z0-9_-]{43}")


@pytest.fixture
def staff(client, admin_user):
    client.force_login(admin_user)
    return client


def add_form(world, **fields):
    form = {
        "name": "Console key",
        "kind": KeyKind.PROJECT,
        "team": str(world.team.id),
        "project": str(world.project.id),
        "user": "",
        "scopes": "[]",
        "permission": Permission.FULL_ACCESS,
        "grants-TOTAL_FORMS": "0",
        "grants-INITIAL_FORMS": "0",
        "grants-MIN_NUM_FORMS": "0",
        "grants-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    form.update(fields)
    return form


def secrets_in(response):
    return [
        m for message in get_messages(response.wsgi_request) for m in SECRET.findall(str(message))
    ]


def test_a_key_added_in_the_console_shows_its_secret_once_and_stores_only_a_hash(staff, api, world):
    response = staff.post(ADD_URL, add_form(world))

    assert response.status_code == 302, response.content.decode()[:2000]
    [secret] = secrets_in(response)
    key = ApiKey.objects.get(name="Console key")
    assert key.secret_hash == hash_secret(secret)
    assert secret.startswith(key.prefix)
    stored = json.dumps(list(ApiKey.objects.filter(id=key.id).values()), default=str)
    assert secret not in stored
    assert not any(secret in entry.change_message for entry in LogEntry.objects.all())
    # The next page shows the message once; the one after has forgotten it.
    shown = staff.get(response["Location"]).content.decode()
    assert shown.count(secret) == 1
    assert secret not in staff.get(f"{CHANGELIST_URL}{key.id}/change/").content.decode()
    assert api.get("/project", key=secret).json()["data"]["id"] == str(world.project.id)


def test_a_personal_key_added_in_the_console_keeps_its_grants(staff, api, world):
    form = add_form(
        world,
        name="Agent",
        kind=KeyKind.PERSONAL,
        project="",
        user=str(world.users[Role.ADMIN].id),
        scopes='["resources.read", "resources.write"]',
        **{
            "grants-TOTAL_FORMS": "1",
            "grants-0-project": str(world.other_project.id),
            "grants-0-scopes": '["resources.read"]',
        },
    )

    response = staff.post(ADD_URL, form)

    assert response.status_code == 302, response.content.decode()[:2000]
    [secret] = secrets_in(response)
    assert secret.startswith("sr_user_")
    key = ApiKey.objects.get(name="Agent")
    assert sorted(key.scopes) == ["resources.read", "resources.write"]
    assert list(key.grants.values_list("project_id", flat=True)) == [world.other_project.id]
    reached = api.get("/project", key=secret, project=world.other_project.id)
    assert reached.status_code == 200
    assert api.get("/project", key=secret, project=world.project.id).status_code == 403


def test_a_team_key_added_in_the_console_reaches_its_selected_projects(staff, api, world):
    form = add_form(world, name="Team", kind=KeyKind.TEAM, projects=[str(world.other_project.id)])

    response = staff.post(ADD_URL, form)

    [secret] = secrets_in(response)
    assert api.get("/project", key=secret, project=world.other_project.id).status_code == 200
    assert api.get("/project", key=secret, project=world.project.id).status_code == 403


def test_a_project_key_without_a_project_is_refused_by_the_form(staff, world):
    response = staff.post(ADD_URL, add_form(world, project=""))

    assert response.status_code == 200
    assert not ApiKey.objects.filter(name="Console key").exists()
    assert secrets_in(response) == []


def test_the_revoke_action_stops_the_selected_keys_at_once(staff, api, world):
    secret = world.keys["project"]
    assert api.get("/project", key=secret).status_code == 200  # now cached
    key = ApiKey.objects.get(secret_hash=hash_secret(secret))
    untouched = ApiKey.objects.get(secret_hash=hash_secret(world.keys["team"]))

    response = staff.post(
        CHANGELIST_URL, {"action": "revoke_keys", "_selected_action": [str(key.id)]}
    )

    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Revoked 1 keys."]
    key.refresh_from_db()
    untouched.refresh_from_db()
    assert key.revoked_at is not None
    assert untouched.revoked_at is None
    assert api.get("/project", key=secret).status_code == 401
    assert api.get("/project", key=world.keys["team"]).status_code == 200


def test_deleting_a_key_in_the_console_stops_it_at_once(staff, api, world):
    secret = world.keys["read_only"]
    assert api.get("/project", key=secret).status_code == 200  # now cached
    key = ApiKey.objects.get(secret_hash=hash_secret(secret))

    response = staff.post(f"{CHANGELIST_URL}{key.id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ApiKey.objects.filter(id=key.id).exists()
    assert api.get("/project", key=secret).status_code == 401


def test_bulk_deleting_keys_in_the_console_stops_them_at_once(staff, api, world):
    secret = world.keys["sending"]
    api.get("/projects", key=secret)  # now cached
    key = ApiKey.objects.get(secret_hash=hash_secret(secret))

    staff.post(
        CHANGELIST_URL,
        {"action": "delete_selected", "_selected_action": [str(key.id)], "post": "yes"},
    )

    assert not ApiKey.objects.filter(id=key.id).exists()
    assert api.get("/projects", key=secret).status_code == 401


def test_staff_who_may_only_view_keys_cannot_revoke_them(client, world):
    user = UserFactory(username="key-viewer@example.com", is_staff=True)
    user.user_permissions.add(AuthPermission.objects.get(codename="view_apikey"))
    client.force_login(user)
    key = ApiKey.objects.get(secret_hash=hash_secret(world.keys["project"]))

    page = client.get(CHANGELIST_URL)
    client.post(CHANGELIST_URL, {"action": "revoke_keys", "_selected_action": [str(key.id)]})

    assert page.status_code == 200
    assert b"Revoke the selected keys" not in page.content
    key.refresh_from_db()
    assert key.revoked_at is None
