"""Writes of teams, projects, members and keys."""

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from config.db.update import model_update
from config.runtime import clock
from tenancy.access import ALL_SCOPES, INTEGRATION_PREFIX, PERSONAL_PREFIX, hash_secret
from tenancy.cache import forget, once_per
from tenancy.models import ApiKey, KeyKind, Permission, Plan, Project, ProjectGrant, Team
from tenancy.selectors import key_cache_name, plan_cache_name, project_cache_name

VISIBLE_PREFIX_CHARS = 8


def _new_secret(kind: str) -> str:
    head = PERSONAL_PREFIX if kind == KeyKind.PERSONAL else INTEGRATION_PREFIX
    return head + secrets.token_urlsafe(32)


@transaction.atomic
def api_key_create(
    *,
    team: Team,
    kind: str,
    name: str,
    project: Project | None = None,
    projects: Iterable[Project] = (),
    all_projects: bool = False,
    user: User | None = None,
    scopes: Iterable[str] = (),
    permission: str = Permission.FULL_ACCESS,
    grants: Mapping[Project, Iterable[str]] | None = None,
) -> tuple[ApiKey, str]:
    """Creates a key and returns it with its secret, which is never available again."""
    secret = _new_secret(kind)
    head = PERSONAL_PREFIX if kind == KeyKind.PERSONAL else INTEGRATION_PREFIX
    key = ApiKey.objects.create(
        team=team,
        kind=kind,
        name=name,
        prefix=secret[: len(head) + VISIBLE_PREFIX_CHARS],
        secret_hash=hash_secret(secret),
        project=project,
        all_projects=all_projects,
        user=user,
        scopes=sorted(set(scopes) & ALL_SCOPES) if kind == KeyKind.PERSONAL else [],
        permission=permission,
    )
    if kind == KeyKind.TEAM and not all_projects:
        key.projects.set(list(projects))
    for granted_project, granted_scopes in (grants or {}).items():
        ProjectGrant.objects.create(
            api_key=key, project=granted_project, scopes=sorted(set(granted_scopes) & ALL_SCOPES)
        )
    return key, secret


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revokes a key; it stops working at once in this process and within
    LOCAL_CACHE_SECONDS in every other (tenancy/cache.py)."""
    ApiKey.objects.filter(id=api_key.id, revoked_at__isnull=True).update(revoked_at=clock.now())
    api_key_forget(api_key=api_key)
    api_key.refresh_from_db(fields=["revoked_at"])
    return api_key


def api_key_forget(*, api_key: ApiKey) -> None:
    """Drops a key's cached record after it is revoked, deleted or its projects change."""
    name = key_cache_name(api_key.secret_hash)
    forget(name)
    # Again after commit: a request may have cached the old row in between.
    transaction.on_commit(lambda: forget(name))


def api_key_touch(*, key_id: str) -> None:
    """Records use of a key, at most once a minute per key so the hot path stays read-only."""
    if once_per(f"apikey-used:{key_id}", 60):
        ApiKey.objects.filter(id=key_id).update(last_used_at=clock.now())


def project_forget(*, project: Project) -> None:
    forget(project_cache_name(str(project.id)))


def _forget_now_and_on_commit(project: Project) -> None:
    # Now, for reads in this transaction; again after commit, in case another request
    # cached the old row in between.
    project_forget(project=project)
    transaction.on_commit(lambda: project_forget(project=project))


def project_update(
    *, project: Project, name: str | None = None, policies: Mapping[str, Any]
) -> Project:
    """Changes the project's name and policies (already validated)."""
    fields = {
        policy: "" if policy == "default_from" and value is None else value
        for policy, value in policies.items()
    }
    if name is not None:
        fields["name"] = name
    if model_update(project, fields=fields):
        _forget_now_and_on_commit(project)
    return project


def team_set_rollout(*, team: Team, enabled: bool) -> Team:
    """Turns the `messaging_rollout` flag on or off for a team."""
    team.messaging_rollout = enabled
    team.save(update_fields=["messaging_rollout", "updated_at"])
    for project in team.projects.all():
        _forget_now_and_on_commit(project)
    return team


def team_plan_forget(*, team: Team) -> None:
    """Drops a team's cached plan terms (quotas, rate limit) now and after commit."""
    name = plan_cache_name(str(team.id))
    forget(name)
    transaction.on_commit(lambda: forget(name))


def plan_forget(*, plan: Plan) -> None:
    """Drops the cached terms of every team on `plan` after it changed."""
    for team in Team.objects.filter(plan=plan).only("id"):
        team_plan_forget(team=team)


def team_plan_set(*, team: Team, plan: Plan | None) -> Team:
    """Puts a team on a plan (None: no quotas, the default rate limit)."""
    if model_update(team, fields={"plan": plan}):
        team_plan_forget(team=team)
    return team
