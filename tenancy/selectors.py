"""Reads of teams, projects and keys."""

import uuid

from django.db.models import QuerySet

from tenancy.access import PERMISSION_SCOPES, ROLE_SCOPES, Access, KeyRecord, hash_secret
from tenancy.cache import cached
from tenancy.models import ApiKey, KeyKind, Membership, Project, ProjectGrant

KEY_CACHE_SECONDS = 60
PROJECT_CACHE_SECONDS = 60


def key_cache_name(secret_hash: str) -> str:
    return f"apikey:{secret_hash}"


def project_cache_name(project_id: str) -> str:
    return f"project:{project_id}"


def api_key_record_get(*, secret: str) -> KeyRecord | None:
    """The key for a presented secret, from the caches or the database; None if unknown."""
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

    return cached(key_cache_name(secret_hash), load, shared_seconds=KEY_CACHE_SECONDS)


def project_get(*, project_id: str) -> Project | None:
    """A project by id, cached; policy changes clear the cache entry."""
    return cached(
        project_cache_name(project_id),
        lambda: Project.objects.filter(id=project_id).select_related("team").first(),
        shared_seconds=PROJECT_CACHE_SECONDS,
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
    grant = ProjectGrant.objects.filter(api_key_id=uuid.UUID(key.id), project_id=project.id).first()
    role = (
        Membership.objects.filter(
            team_id=project.team_id, user_id=key.user_id, user__is_active=True
        )
        .values_list("role", flat=True)
        .first()
    )
    if grant is None or role is None:
        return None
    scopes = key.scopes & frozenset(grant.scopes) & ROLE_SCOPES[role] & permission_scopes
    return Access(key=key, project_id=project_id, scopes=scopes, role=role)


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
