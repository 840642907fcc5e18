"""What a key may do: its record as cached for authentication, and its scopes in a project."""

import hashlib
from dataclasses import dataclass

from tenancy.models import KeyKind, Permission, Role, Scope

ALL_SCOPES: frozenset[str] = frozenset(Scope.values)

PERMISSION_SCOPES: dict[str, frozenset[str]] = {
    Permission.FULL_ACCESS: ALL_SCOPES,
    Permission.SENDING_ACCESS: frozenset({Scope.EVENTS_WRITE, Scope.MESSAGES_SEND}),
    Permission.READ_ONLY: frozenset({Scope.RESOURCES_READ}),
}

ROLE_SCOPES: dict[str, frozenset[str]] = {
    Role.OWNER: ALL_SCOPES,
    Role.ADMIN: ALL_SCOPES,
    Role.MEMBER: ALL_SCOPES,
    Role.VIEWER: frozenset({Scope.RESOURCES_READ}),
}

# Roles that may change project settings through a personal key.
MANAGING_ROLES: frozenset[str] = frozenset({Role.OWNER, Role.ADMIN})

INTEGRATION_PREFIX = "sr_"
PERSONAL_PREFIX = "sr_user_"


def hash_secret(secret: str) -> str:
    """Keys carry 256 bits of entropy, so a plain SHA-256 is a safe, fast lookup hash."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class KeyRecord:
    """The immutable facts about a key that authentication needs; cached between requests."""

    id: str
    kind: str
    team_id: str
    project_id: str | None
    all_projects: bool
    project_ids: frozenset[str]
    user_id: int | None
    scopes: frozenset[str]
    permission: str
    revoked: bool

    @property
    def is_personal(self) -> bool:
        return self.kind == KeyKind.PERSONAL


@dataclass(frozen=True)
class Access:
    """A key acting in one project: the scopes it holds there, and the user's role if any."""

    key: KeyRecord
    project_id: str
    scopes: frozenset[str]
    role: str | None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def may_manage_project(self) -> bool:
        if self.key.is_personal:
            return self.role in MANAGING_ROLES
        return self.key.permission == Permission.FULL_ACCESS
