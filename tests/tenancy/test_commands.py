"""`bootstrap`, `create_api_key` and `create_demo_admin`: how scripts and people get
working keys and an admin login."""

import io
import json
import runpy

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tenancy.access import ALL_SCOPES, hash_secret
from tenancy.models import ApiKey, KeyKind, Meter, Permission, Project, Role, Team
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def run(command, *args):
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def bootstrap():
    return json.loads(run("bootstrap", "--json"))


def project_seen_by(api, secret, project=None):
    """(status, project id or error code) of GET /project with this key and header."""
    response = api.get("/project", key=secret, project=project)
    body = response.json()
    return response.status_code, body["data"]["id"] if "data" in body else body["error"]["code"]


# bootstrap


def test_bootstrap_prints_the_contract_shape():
    result = bootstrap()

    assert set(result) == {"team_id", "project_id", "other_project_id", "keys"}
    assert set(result["keys"]) == {
        "project",
        "team",
        "personal",
        "read_only",
        "sending",
        "other_project",
    }
    assert result["keys"]["personal"].startswith("sr_user_")
    for name, secret in result["keys"].items():
        assert secret.startswith("sr_"), name
        assert len(secret) >= 43, "at least 32 random bytes"
    team = Team.objects.get(id=result["team_id"])
    assert team.messaging_rollout is True
    assert set(team.projects.values_list("id", flat=True)) == {
        Project.objects.get(id=result["project_id"]).id,
        Project.objects.get(id=result["other_project_id"]).id,
    }


def test_bootstrap_stores_only_hashes_of_the_secrets_it_prints():
    result = bootstrap()

    for secret in result["keys"].values():
        key = ApiKey.objects.get(secret_hash=hash_secret(secret))
        assert secret not in (key.prefix, key.secret_hash, key.name)
        assert secret.startswith(key.prefix)


def test_bootstrap_twice_reuses_the_team_and_projects_and_both_runs_keys_work(api):
    first = bootstrap()
    second = bootstrap()

    for field in ("team_id", "project_id", "other_project_id"):
        assert first[field] == second[field]
    assert first["keys"]["project"] != second["keys"]["project"]
    assert Team.objects.filter(id=first["team_id"]).count() == 1
    assert Project.objects.filter(team_id=first["team_id"]).count() == 2
    for run_result in (first, second):
        assert project_seen_by(api, run_result["keys"]["project"]) == (200, first["project_id"])


def test_bootstrap_keeps_its_projects_after_they_are_renamed(api):
    first = bootstrap()
    api.patch("/project", {"name": "Shop"}, key=first["keys"]["project"])

    second = bootstrap()

    assert second["project_id"] == first["project_id"]
    assert second["other_project_id"] == first["other_project_id"]
    assert Project.objects.filter(team_id=first["team_id"]).count() == 2


def test_bootstrap_turns_the_rollout_flag_back_on():
    first = bootstrap()
    Team.objects.filter(id=first["team_id"]).update(messaging_rollout=False)

    bootstrap()

    assert Team.objects.get(id=first["team_id"]).messaging_rollout is True


def test_the_bootstrap_team_is_on_a_plan_without_quotas(api):
    result = bootstrap()
    bootstrap()

    team = Team.objects.select_related("plan").get(id=result["team_id"])
    assert team.plan is not None
    assert all(team.plan.quota(meter) is None for meter in Meter.values)
    usage = api.get("/project/usage", key=result["keys"]["project"]).json()["data"]
    assert usage["plan"]["name"] == team.plan.name
    assert set(usage["plan"]["quotas"].values()) == {None}


def test_each_bootstrap_key_has_the_powers_its_name_promises(api):
    result = bootstrap()
    keys, main, other = result["keys"], result["project_id"], result["other_project_id"]

    assert project_seen_by(api, keys["project"]) == (200, main)
    assert project_seen_by(api, keys["project"], other) == (403, "forbidden")
    patch = api.patch("/project", {"name": "Renamed"}, key=keys["project"])
    assert patch.status_code == 200

    assert project_seen_by(api, keys["read_only"]) == (200, main)
    read_only_patch = api.patch("/project", {"name": "No"}, key=keys["read_only"])
    assert read_only_patch.status_code == 403

    assert project_seen_by(api, keys["sending"]) == (403, "forbidden")

    assert project_seen_by(api, keys["other_project"]) == (200, other)
    assert project_seen_by(api, keys["other_project"], main) == (403, "forbidden")

    assert project_seen_by(api, keys["team"]) == (200, main)
    assert project_seen_by(api, keys["team"], other) == (200, other)

    assert project_seen_by(api, keys["personal"]) == (400, "project_required")
    assert project_seen_by(api, keys["personal"], main) == (200, main)
    assert project_seen_by(api, keys["personal"], other) == (200, other)
    personal_patch = api.patch("/project", {"name": "Owner"}, key=keys["personal"], project=main)
    assert personal_patch.status_code == 200


def test_bootstrap_without_json_prints_every_key():
    text = run("bootstrap")

    for name in ("project", "team", "personal", "read_only", "sending", "other_project"):
        assert f"{name}: sr_" in text


# create_api_key


def create_key(*args):
    return json.loads(run("create_api_key", "--json", *args))


def test_create_a_project_key(api, world):
    created = create_key("--kind", "project", "--project", str(world.other_project.id))

    key = ApiKey.objects.get(id=created["id"])
    assert (key.kind, key.project_id, key.permission) == (
        KeyKind.PROJECT,
        world.other_project.id,
        Permission.FULL_ACCESS,
    )
    assert key.secret_hash == hash_secret(created["secret"])
    assert created["secret"].startswith(created["prefix"])
    assert project_seen_by(api, created["secret"]) == (200, str(world.other_project.id))


def test_create_a_read_only_project_key(api, world):
    created = create_key(
        "--kind", "project", "--project", str(world.project.id), "--permission", "read_only"
    )

    assert project_seen_by(api, created["secret"]) == (200, str(world.project.id))
    patch = api.patch("/project", {"name": "x"}, key=created["secret"])
    assert patch.status_code == 403


def test_create_a_team_key_over_selected_projects(api, world):
    created = create_key(
        "--kind",
        "team",
        "--project",
        str(world.other_project.id),
        "--project",
        str(world.project.id),
    )

    secret = created["secret"]
    assert project_seen_by(api, secret) == (200, str(world.other_project.id)), "first is default"
    assert project_seen_by(api, secret, world.project.id) == (200, str(world.project.id))
    assert project_seen_by(api, secret, world.foreign_project.id) == (403, "forbidden")


def test_create_a_team_key_over_every_project(api, world):
    created = create_key(
        "--kind", "team", "--team", str(world.team.id), "--all-projects", "--name", "CI"
    )

    assert ApiKey.objects.get(id=created["id"]).name == "CI"
    assert project_seen_by(api, created["secret"]) == (400, "project_required")
    later = Project.objects.create(team=world.team, name="Later")
    assert project_seen_by(api, created["secret"], later.id) == (200, str(later.id))


def test_create_a_personal_key_with_chosen_scopes(api, world):
    created = create_key(
        "--kind",
        "personal",
        "--user",
        world.users[Role.ADMIN].username,
        "--project",
        str(world.project.id),
        "--scope",
        "resources.read",
    )

    secret = created["secret"]
    assert secret.startswith("sr_user_")
    key = ApiKey.objects.get(id=created["id"])
    assert key.scopes == ["resources.read"]
    assert list(key.grants.values_list("project_id", "scopes")) == [
        (world.project.id, ["resources.read"])
    ]
    assert project_seen_by(api, secret, world.project.id) == (200, str(world.project.id))
    assert project_seen_by(api, secret, world.other_project.id) == (403, "forbidden")
    patch = api.patch("/project", {"name": "x"}, key=secret, project=world.project.id)
    assert patch.status_code == 403


def test_a_personal_key_gets_every_scope_by_default(world):
    created = create_key(
        "--kind",
        "personal",
        "--user",
        world.users[Role.OWNER].username,
        "--team",
        str(world.team.id),
    )

    assert set(ApiKey.objects.get(id=created["id"]).scopes) == ALL_SCOPES


def test_the_plain_output_shows_the_secret_once(world):
    text = run("create_api_key", "--kind", "project", "--project", str(world.project.id))

    secret = text.rsplit(" ", 1)[-1].strip()
    assert ApiKey.objects.filter(secret_hash=hash_secret(secret)).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "project"], "Name a --team or a --project"),
        (["--kind", "project", "--project", "{uuid}"], "Unknown project"),
        (["--kind", "project", "--project", "not-a-uuid"], "Not an id"),
        (["--kind", "project", "--team", "{team}"], "exactly one --project"),
        (["--kind", "personal", "--team", "{team}"], "needs --user"),
        (["--kind", "personal", "--team", "{team}", "--user", "stranger"], "member of the team"),
        (
            ["--kind", "team", "--team", "{team}", "--project", "{foreign}"],
            "must belong to the team",
        ),
    ],
)
def test_create_api_key_refuses_what_would_not_work(world, args, message):
    UserFactory(username="stranger")
    MembershipFactory(team=world.foreign_project.team, user__username="elsewhere")
    values = {
        "{uuid}": "00000000-0000-4000-8000-000000000000",
        "{team}": str(world.team.id),
        "{foreign}": str(world.foreign_project.id),
    }
    filled = [values.get(arg, arg) for arg in args]

    with pytest.raises(CommandError, match=message):
        run("create_api_key", *filled)


# create_demo_admin


@pytest.fixture
def local_settings(settings):
    """What config.settings.local allows (the test settings, like production, do not)."""
    settings.DEMO_ADMIN_ALLOWED = True


def demo_admin():
    return json.loads(run("create_demo_admin", "--json"))


def test_the_demo_admin_is_a_staff_login_that_signs_into_the_admin(local_settings, client):
    created = demo_admin()

    assert created["username"] == "admin"
    user = get_user_model().objects.get(username="admin")
    assert (user.is_active, user.is_staff, user.is_superuser) == (True, True, True)
    assert len(created["password"]) >= 20, "at least 16 random bytes"
    assert created["password"] not in user.password
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "admin", "password": created["password"]}
    )
    assert (response.status_code, response["Location"]) == (302, "/admin/")
    assert client.get("/admin/tenancy/apikey/").status_code == 200


def test_a_second_demo_admin_run_keeps_the_password_and_shows_none(local_settings):
    first = demo_admin()

    second = demo_admin()

    assert second == {"username": "admin", "password": None}
    assert get_user_model().objects.filter(username="admin").count() == 1
    assert get_user_model().objects.get(username="admin").check_password(first["password"])


def test_the_plain_demo_admin_output_shows_the_password_only_when_it_is_created(
    local_settings,
):
    text = run("create_demo_admin")
    password = text.rsplit(" ", 1)[-1].strip()

    assert get_user_model().objects.get(username="admin").check_password(password)
    again = run("create_demo_admin")
    assert "exists already" in again
    assert password not in again


def test_create_demo_admin_refuses_without_the_local_settings():
    with pytest.raises(CommandError, match="createsuperuser"):
        run("create_demo_admin")

    assert not get_user_model().objects.filter(username="admin").exists()


def test_only_the_local_settings_allow_the_demo_admin(monkeypatch):
    for name, value in {
        "DJANGO_SECRET_KEY": "production-secret",
        "DATABASE_URL": "postgres://user:pass@db.example.com:5432/sendrealm",
        "CACHE_URL": "redis://cache.example.com:6379/0",
        "CELERY_BROKER_URL": "redis://broker.example.com:6379/1",
        "SECRETS_ENCRYPTION_KEY": "LyYc3e9MyEYvJ-tQNrOPkDfRcgmXz6XMMig0uKvhWBw=",
    }.items():
        monkeypatch.setenv(name, value)

    assert runpy.run_module("config.settings.local")["DEMO_ADMIN_ALLOWED"] is True
    assert runpy.run_module("config.settings.production")["DEMO_ADMIN_ALLOWED"] is False
