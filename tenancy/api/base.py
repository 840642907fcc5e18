"""The base view every project endpoint derives from: policy in one place."""

from typing import Any, ClassVar

from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from config.api.envelope import EnvelopeRenderer
from config.api.errors import Unauthenticated
from config.api.exceptions import envelope_exception_handler
from config.api.lean import LeanAnswer, LeanRequest
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
    # Methods served on the lean path (config/api/lean.py), with the same checks, handler
    # and envelope as DRF's dispatch: the busiest endpoints name theirs.
    lean_methods: ClassVar[frozenset[str]] = frozenset()

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

    @classmethod
    def lean_dispatch(cls, request: LeanRequest, kwargs: dict[str, Any]) -> LeanAnswer:
        """Serves `request` as DRF's dispatch of this view would, without DRF's Request,
        negotiation and parser machinery: the view's authentication and permission
        classes, then its handler, every failure through the API's exception handler, the
        rate limit headers (finalize_response) and `Allow`. The lean path only brings
        requests whose `Accept` and `Content-Type` need no negotiation."""
        view = cls()
        # As Django's View.as_view: the request, and HEAD served by GET. The checks and
        # handlers below are typed for DRF's Request; a LeanRequest carries what they read
        # (`method`, `META`, `data`, `query_params`, `auth`, `_request`), which
        # tests/config/test_lean.py shows case by case, so each call says arg-type.
        view.setup(request, **kwargs)  # type: ignore[arg-type]
        view.format_kwarg = None
        view.headers = dict(view.default_response_headers)
        request.view = view
        try:
            for authenticator in view.get_authenticators():
                found = authenticator.authenticate(request)  # type: ignore[arg-type]
                if found is not None:
                    request.auth = found[1]
                    break
            for permission in view.get_permissions():
                permission.has_permission(request, view)  # type: ignore[arg-type]
            response = getattr(view, request.method.lower())(request, **kwargs)
        except Exception as error:
            response = envelope_exception_handler(error, {"view": view, "request": request})
        decision = getattr(request, "rate_limit", None)
        if decision is not None:
            decision.apply(response)
        for name, value in view.headers.items():
            response[name] = value
        renderer: BaseRenderer = _RENDERER
        body = renderer.render(response.data, "application/json", {"response": response})
        headers = [("Content-Type", "application/json")]
        headers.extend(item for item in response.items() if item[0] != "Content-Type")
        return LeanAnswer(response.status_code, headers, body)


_RENDERER = EnvelopeRenderer()
