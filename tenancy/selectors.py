"""Reads of teams, projects and keys."""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Max, QuerySet

from config.db.bulk import rows_fetch
from tenancy.access import PERMISSION_SCOPES, ROLE_SCOPES, Access, KeyRecord, hash_secret
from tenancy.cache import cached
from tenancy.models import ApiKey, KeyKind, Membership, Meter, Project, ProjectGrant, Team

# What a team without a plan is reported to be on: no quotas, the default rate limit.
DEFAULT_PLAN_NAME = "default"


def key_cache_name(secret_hash: str) -> str:
    return f"apikey:{secret_hash}"


def project_cache_name(project_id: str) -> str:
    return f"project:{project_id}"


def plan_cache_name(team_id: str) -> str:
    return f"plan:{team_id}"


@dataclass(frozen=True)
class PlanTerms:
    """What a team's plan allows: monthly quotas per meter (None: unlimited) and the rate
    limit of each of its keys (None: the API_RATE_LIMIT setting; 0: none)."""

    name: str
    quotas: tuple[tuple[str, int | None], ...]
    rate_limit: int | None

    def quota(self, meter: str) -> int | None:
        return dict(self.quotas).get(meter)

    @property
    def limited(self) -> bool:
        return any(value is not None for _, value in self.quotas)


def plan_terms_get(*, team_id: str) -> PlanTerms:
    """The terms a team is on, kept per process like keys (tenancy/cache.py): a plan change
    is seen everywhere within LOCAL_CACHE_SECONDS, here at once."""

    def load() -> PlanTerms | None:
        team = Team.objects.filter(id=team_id).select_related("plan").first()
        plan = team.plan if team is not None else None
        rate_limit = team.api_rate_limit if team is not None else None
        if rate_limit is None and plan is not None:
            rate_limit = plan.api_rate_limit
        return PlanTerms(
            name=plan.name if plan is not None else DEFAULT_PLAN_NAME,
            quotas=tuple(
                (meter, plan.quota(meter) if plan is not None else None) for meter in Meter.values
            ),
            rate_limit=rate_limit,
        )

    terms = cached(plan_cache_name(team_id), load)
    if terms is None:
        return PlanTerms(
            name=DEFAULT_PLAN_NAME,
            quotas=tuple((meter, None) for meter in Meter.values),
            rate_limit=None,
        )
    return terms


def api_key_record_get(*, secret: str) -> KeyRecord | None:
    """The key for a presented secret, from this process's cache (tenancy/cache.py) or the
    database; None if unknown. A revocation is seen everywhere within LOCAL_CACHE_SECONDS,
    here at once."""
    secret_hash = hash_secret(secret)

    def load() -> KeyRecord | None:
        key = ApiKey.objects.filter(secret_hash=secret_hash).prefetch_related("projects").first()
        if key is None:
            return None
        return KeyRecord(
            id=str(key.id),
            kind=key.kind,
            team_id=str(key.team_id),
            project_id=str(key.project_id) if key.project_id else None,
            all_projects=key.all_projects,
            project_ids=frozenset(str(p.id) for p in key.projects.all()),
            user_id=key.user_id,
            scopes=frozenset(key.scopes or []),
            permission=key.permission,
            revoked=key.revoked_at is not None,
        )

    return cached(key_cache_name(secret_hash), load)


def project_get(*, project_id: str) -> Project | None:
    """A project by id, kept per process (tenancy/cache.py): a policy change is seen
    everywhere within LOCAL_CACHE_SECONDS, here at once."""
    return cached(
        project_cache_name(project_id),
        lambda: Project.objects.filter(id=project_id).select_related("team").first(),
    )


def access_resolve(*, key: KeyRecord, project: Project) -> Access | None:
    """The scopes `key` holds in `project`, or None when it cannot reach the project at all."""
    project_id = str(project.id)
    permission_scopes = PERMISSION_SCOPES[key.permission]
    if key.kind == KeyKind.PROJECT:
        if key.project_id != project_id:
            return None
        return Access(key=key, project_id=project_id, scopes=permission_scopes, role=None)
    if str(project.team_id) != key.team_id:
        return None
    if key.kind == KeyKind.TEAM:
        if not key.all_projects and project_id not in key.project_ids:
            return None
        return Access(key=key, project_id=project_id, scopes=permission_scopes, role=None)
    # Personal key: the lesser of its scopes, its saved grant and the user's current role;
    # a deactivated user's keys stop with the user.
    if key.user_id is None:
        return None
    rows = rows_fetch(
        _GRANT_AND_ROLE, [project.team_id, key.user_id, uuid.UUID(key.id), project.id], prepare=True
    )
    if not rows:
        return None
    granted, role = rows[0]
    scopes = key.scopes & frozenset(granted) & ROLE_SCOPES[role] & permission_scopes
    return Access(key=key, project_id=project_id, scopes=scopes, role=role)


_USER = get_user_model()
# A personal key's saved grant in a project and its user's current role in the team (an
# active user's only), read on each of its requests, so a change to either counts at once:
# one prepared statement, where the two ORM queries it replaces cost more than the rest
# of the request.
_GRANT_AND_ROLE = (
    f"SELECT g.{ProjectGrant._meta.get_field('scopes').column}, m.role "  # noqa: S608
    f"FROM {ProjectGrant._meta.db_table} g "
    f"JOIN {Membership._meta.db_table} m ON m.team_id = %b AND m.user_id = %b "
    f"JOIN {_USER._meta.db_table} u ON u.{_USER._meta.pk.column} = m.user_id AND u.is_active "
    "WHERE g.api_key_id = %b AND g.project_id = %b"
)


def project_list_for_key(*, key: KeyRecord) -> QuerySet[Project]:
    """Every project a key can reach (account discovery)."""
    projects = Project.objects.filter(team_id=key.team_id).select_related("team")
    if key.kind == KeyKind.PROJECT:
        return projects.filter(id=key.project_id) if key.project_id else projects.none()
    if key.kind == KeyKind.TEAM:
        return projects if key.all_projects else projects.filter(id__in=key.project_ids)
    if key.user_id is None:
        return projects.none()
    return projects.filter(
        grants__api_key_id=uuid.UUID(key.id),
        team__memberships__user_id=key.user_id,
        team__memberships__user__is_active=True,
    )


def project_retention_list(*, fields: Iterable[str]) -> Iterable[tuple[Any, ...]]:
    """Every project's id with its retention settings named in `fields`, in that order: the
    purge sweeps of the families that keep rows per project."""
    return Project.objects.values_list("id", *fields)


def project_retention_longest(*, field: str) -> int | None:
    """The longest retention any project has in `field` (None when there is no project):
    how long a family's rows may be kept at most, for the partitions it drops whole."""
    longest: int | None = Project.objects.aggregate(longest=Max(field))["longest"]
    return longest
