"""The base view every project endpoint derives from: policy in one place."""

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

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
from tenancy.ratelimit import RateDecision

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
    # DRF negotiates the answer's media type: the lean path takes JSON or anything only.
    lean_own_accept: ClassVar[bool] = False

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
    def lean_takes(cls, environ: dict[str, Any], body: bytes) -> bool:
        """Every request that reaches the view on the lean path is its to answer."""
        return True

    @classmethod
    def lean_dispatch(cls, request: LeanRequest, kwargs: dict[str, Any]) -> LeanAnswer:
        """Serves `request` as DRF's dispatch of this view would, without DRF's Request,
        negotiation and parser machinery: the view's authentication and permission
        classes, then its handler, every failure through the API's exception handler, the
        rate limit headers (finalize_response) and `Allow`. The lean path only brings
        requests whose `Accept` and `Content-Type` need no negotiation. A method with a
        plain handler (`lean_<method>`, see LeanHandler) is answered by it."""
        plain: LeanHandler | None = getattr(cls, f"lean_{request.method.lower()}", None)
        if plain is not None:
            return cls._lean_plain(request, kwargs, plain)
        view = cls._lean_view(request, kwargs)
        try:
            cls._lean_checks(view, request)
            response = getattr(view, request.method.lower())(request, **kwargs)
        except Exception as error:
            response = envelope_exception_handler(error, {"view": view, "request": request})
        return cls._lean_answer(view, request, response)

    @classmethod
    def _lean_view(cls, request: LeanRequest, kwargs: dict[str, Any]) -> "ProjectView":
        """A view serving `request`, set up as Django's View.as_view and DRF's
        `initial` set one up: the request, and HEAD served by GET."""
        view = cls()
        # The checks and handlers are typed for DRF's Request; a LeanRequest carries what
        # they read (`method`, `META`, `data`, `query_params`, `auth`, `_request`), which
        # tests/config/test_lean.py shows case by case, so each call says arg-type.
        view.setup(request, **kwargs)  # type: ignore[arg-type]
        view.format_kwarg = None
        view.headers = dict(view.default_response_headers)
        request.view = view
        return view

    @staticmethod
    def _lean_checks(view: "ProjectView", request: LeanRequest) -> None:
        """The view's authentication, then its permissions (the project and scope)."""
        for authenticator in view.get_authenticators():
            found = authenticator.authenticate(request)  # type: ignore[arg-type]
            if found is not None:
                request.auth = found[1]
                break
        for permission in view.get_permissions():
            permission.has_permission(request, view)  # type: ignore[arg-type]

    @staticmethod
    def _lean_answer(view: "ProjectView", request: LeanRequest, response: Response) -> LeanAnswer:
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

    @classmethod
    def _lean_plain(
        cls, request: LeanRequest, kwargs: dict[str, Any], handler: "LeanHandler"
    ) -> LeanAnswer:
        """`handler`'s answer with the checks and headers of the view's dispatch, without
        a view, a DRF Response or its headers object per request: the checks read only the
        view's class (its policy), so one instance of it serves every request. A failure
        is answered exactly as in `lean_dispatch`, by a view set up for the request."""
        policy = _lean_policy(cls)
        request.view = policy.view
        try:
            cls._lean_checks(policy.view, request)
            status, data = handler(request, request.project)
        except Exception as error:
            view = cls._lean_view(request, kwargs)
            response = envelope_exception_handler(error, {"view": view, "request": request})
            return cls._lean_answer(view, request, response)
        headers = [("Content-Type", "application/json")]
        decision: RateDecision | None = getattr(request, "rate_limit", None)
        if decision is not None:
            headers.extend(decision.headers())
        headers.extend(policy.headers)
        body = _RENDERER.render({"status": status, "data": data}, "application/json")
        return LeanAnswer(status, headers, body)


class LeanHandler(Protocol):
    """A plain handler of one method on the lean path (a view's `lean_post`): what the
    view's DRF handler answers, as (status, data), for a request that passed the view's
    checks and acts on `project`. The DRF handler calls the same function, so both paths
    answer alike by construction (tests/config/test_lean.py sends every case both ways)."""

    def __call__(self, request: Any, project: Project) -> tuple[int, Any]: ...


@dataclass(frozen=True, slots=True)
class _LeanPolicy:
    # An instance of the view with no request: what its checks read is its class's.
    view: ProjectView
    # The headers DRF's dispatch puts on every answer of the view (`Allow`, `Vary`).
    headers: tuple[tuple[str, str], ...]


_policies: dict[type[ProjectView], _LeanPolicy] = {}


def _lean_policy(view_class: type[ProjectView]) -> _LeanPolicy:
    policy = _policies.get(view_class)
    if policy is None:
        view = view_class()
        policy = _LeanPolicy(view, tuple(view.default_response_headers.items()))
        _policies[view_class] = policy
    return policy


_RENDERER = EnvelopeRenderer()
