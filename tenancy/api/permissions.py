"""Project selection and scope checks shared by every endpoint."""

import re
from typing import Any

from rest_framework.exceptions import MethodNotAllowed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from config.api.errors import Forbidden, Unauthenticated, ValidationFailed
from tenancy.access import Access, KeyRecord
from tenancy.api.authentication import settled_project
from tenancy.errors import ProjectRequired
from tenancy.models import Project
from tenancy.selectors import access_resolve, project_get

PROJECT_HEADER = "HTTP_X_SERVICE_PROJECT_ID"
PROJECT_HEADER_NAME = "X-Service-Project-Id"
# A UUID as the OpenAPI document describes it (`format: uuid`), in either case; the
# braced, URN and unhyphenated spellings Python also reads are malformed here.
_PROJECT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def selected_project_id(request: Request, key: KeyRecord) -> str:
    """The project a request acts on: the header, else the key's own or default project."""
    return project_id_selected(request.META.get(PROJECT_HEADER), key)


def project_id_selected(raw: str | None, key: KeyRecord) -> str:
    """The project named by a project header value `raw` (None: absent) for `key`."""
    if raw is None:
        if key.is_personal:
            raise ProjectRequired()
        if key.project_id is None:
            raise ProjectRequired(
                "This key has no default project; name one with the X-Service-Project-Id header."
            )
        return key.project_id
    if not _PROJECT_ID.fullmatch(raw):
        raise ValidationFailed.at(PROJECT_HEADER_NAME, "Must be a project id (a UUID).")
    return raw.lower()


def project_access(*, key: KeyRecord, project_id: str) -> tuple[Project, Access]:
    """The project a key acts on and what it may do there; 403 when it cannot reach it."""
    project = project_get(project_id=project_id)
    access = access_resolve(key=key, project=project) if project is not None else None
    if project is None or access is None:
        raise Forbidden()
    return project, access


class HasProjectAccess(BasePermission):
    """Resolves `request.project` and `request.access`, then checks the view's scope.

    A view declares what it needs with `required_scopes` (method -> scope) and may set
    `project_scoped = False`, `personal_keys_only` or `integration_keys_only`.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, KeyRecord):
            raise Unauthenticated()
        # The key is known, so a wrong method is 405 before any project or scope decision.
        method = (request.method or "").lower()
        if method not in view.http_method_names or not hasattr(view, method):
            raise MethodNotAllowed(request.method or "")
        if getattr(view, "personal_keys_only", False) and not key.is_personal:
            raise Forbidden("Only personal keys may call this endpoint.")
        if getattr(view, "integration_keys_only", False) and key.is_personal:
            raise Forbidden("Personal keys must use prepare and execute for this action.")
        if not getattr(view, "project_scoped", True):
            return True
        project_id = selected_project_id(request, key)
        # A request the process made for one it serves may carry that one's check.
        checked = settled_project(request._request, key=key, project_id=project_id)
        project, access = checked or project_access(key=key, project_id=project_id)
        # DRF's Request declares no per-request attributes; ProjectView reads these two back
        # through its typed `project` and `access`.
        request.project = project  # type: ignore[attr-defined]
        request.access = access  # type: ignore[attr-defined]
        scope = view.required_scope(request.method) if hasattr(view, "required_scope") else None
        if scope is not None and not access.allows(scope):
            raise Forbidden(f"This key lacks the `{scope}` scope for this action.")
        return True
