"""The base view every project endpoint derives from: policy in one place."""

from typing import Any, ClassVar

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from config.api.errors import Unauthenticated
from tenancy.access import Access, KeyRecord
from tenancy.api.schema import ProjectAutoSchema
from tenancy.models import Project, Scope

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ProjectView(APIView):
    """A project-scoped endpoint. Subclasses name the scope each method needs.

    `project_scoped = False` serves calls outside any project (discovery); `paginated`
    marks list endpoints for the schema. `read_scope` applies to GET/HEAD, `write_scope` to
    every other method; `method_scopes` overrides a single method.
    """

    schema = ProjectAutoSchema()
    project_scoped: ClassVar[bool] = True
    paginated: ClassVar[bool] = False
    read_scope: ClassVar[str | None] = Scope.RESOURCES_READ
    write_scope: ClassVar[str | None] = Scope.RESOURCES_WRITE
    method_scopes: ClassVar[dict[str, str]] = {}

    def required_scope(self, method: str) -> str | None:
        if method in self.method_scopes:
            return self.method_scopes[method]
        if method == "OPTIONS":
            return None
        return self.read_scope if method in READ_METHODS else self.write_scope

    @property
    def key(self) -> KeyRecord:
        """The authenticated key; authentication has refused the request without one."""
        key = self.request.auth
        if not isinstance(key, KeyRecord):
            raise Unauthenticated()
        return key

    @property
    def project(self) -> Project:
        # Set by the project permission (tenancy/api/permissions.py) before any handler.
        project: Project = self.request.project
        return project

    @property
    def access(self) -> Access:
        access: Access = self.request.access
        return access

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        # Every answer to a known key tells its rate limit, errors and 429 included.
        decision = getattr(request._request, "rate_limit", None)
        if decision is not None:
            decision.apply(response)
        return response

    def validated(self, serializer_class: type[BaseSerializer[Any]]) -> dict[str, Any]:
        """The request body as `serializer_class` validates it; a 400 envelope otherwise."""
        body = serializer_class(data=self.request.data)
        body.is_valid(raise_exception=True)
        return dict(body.validated_data)
