"""Running a tool: the REST call it stands for, made inside the process.

A tool call becomes the request a REST client would send (method, path, query string,
JSON body, the caller's own `Authorization` header and `project_id` as the project
header), handed to the view that path resolves to. The project, scope, grant and role
checks, validation, the service and the answer are all the endpoint's own; this module
only splits the flat arguments into those parts and reads the answer back: `data` (and a
list's `metadata`) on success, the `error` object otherwise. Issues about the project
header are renamed to `project_id`, the argument that stood for it.

The `/mcp` request has already authenticated the key and counted the call against its
rate limit; the inner request carries that (`request_settle`, an attribute no client can
set), so the endpoint neither looks the key up again nor counts the call twice. A routed
tool hands over the project it checked as well.
"""

import io
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import orjson
from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponseBase
from django.urls import Resolver404, get_resolver, get_urlconf, resolve
from rest_framework.response import Response

from agent.catalog import Catalog
from agent.schemas import path_arguments, query_arguments
from config.api.errors import Issue, NotFound, ServiceError, ValidationFailed
from config.api.exceptions import error_body_for
from config.api.lean import lean_request
from config.api.routes import Endpoint, reader_of
from config.registries.agenttools import AgentTool
from tenancy.access import Access, KeyRecord
from tenancy.api.authentication import Settled, request_settle
from tenancy.api.permissions import PROJECT_HEADER_NAME, project_access, project_id_selected
from tenancy.models import Project
from tenancy.ratelimit import RateDecision

logger = logging.getLogger(__name__)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


class Outer(Protocol):
    """The `/mcp` request a call came in (Django's, or the lean path's): the REST request
    copies its key, host and scheme."""

    META: dict[str, Any]

    @property
    def scheme(self) -> str | None: ...


@dataclass(frozen=True)
class ToolOutcome:
    """What a call answered: the structured result, or the error object when `is_error`.
    `structured` is None when the endpoint's data is `null` (a lookup that found nothing):
    MCP's structured content is an object, so such a result has only its text."""

    status: int
    structured: dict[str, Any] | None
    is_error: bool

    @property
    def code(self) -> str:
        if not self.is_error or self.structured is None:
            return "ok"
        return str(self.structured.get("code", ""))


def _failure(status: int, error: dict[str, Any]) -> ToolOutcome:
    issues = [
        {**issue, "path": "project_id"} if issue.get("path") == PROJECT_HEADER_NAME else issue
        for issue in error.get("issues", [])
    ]
    return ToolOutcome(status=status, structured={**error, "issues": issues}, is_error=True)


def _error_outcome(exc: Exception) -> ToolOutcome:
    body = error_body_for(exc)
    return _failure(body["status"], body["error"])


@dataclass
class _Request:
    """The REST request a call stands for."""

    path: str
    query: dict[str, str]
    body: dict[str, Any] | None
    project_id: str | None
    # The project `project_id` names and the key's access to it, when already checked.
    checked: tuple[Project, Access] | None = None


def _scalar(name: str, value: Any) -> str:
    """A query parameter's text, as a REST client would write it in the query string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValidationFailed.at(name, "Must be a string, number or boolean.", code="invalid")


def _path_value(tool: AgentTool, name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationFailed.at(name, "Must be a non-empty string.", code="invalid")
    if name in tool.path_values:
        choices = tool.path_values[name]
        if choices is not None and value not in choices:
            listed = ", ".join(f"`{choice}`" for choice in choices)
            raise ValidationFailed.at(name, f"Must be one of {listed}.", code="invalid_choice")
        return quote(value, safe="")
    if not _UUID.fullmatch(value):
        raise ValidationFailed.at(name, "Must be a UUID.", code="invalid_uuid")
    return value


def _split(tool: AgentTool, arguments: dict[str, Any]) -> _Request:
    """The parts of the REST request; 400 at the argument's name for one that cannot be."""
    rest = dict(arguments)
    issues: list[Issue] = []
    project_id: str | None = None
    if tool.project_scoped:
        raw = rest.pop("project_id", None)
        if raw is None:
            issues.append(Issue("required", "project_id", "Name the project to act on."))
        elif not isinstance(raw, str):
            issues.append(Issue("invalid", "project_id", "Must be a project id (a UUID)."))
        else:
            project_id = raw
    values: dict[str, str] = {}
    for name in path_arguments(tool):
        if name not in rest:
            issues.append(Issue("required", name, "This argument is required."))
            continue
        try:
            values[name] = _path_value(tool, name, rest.pop(name))
        except ValidationFailed as error:
            issues.extend(error.issues)
    query: dict[str, str] = {}
    for name in query_arguments(tool):
        if name in rest:
            try:
                query[name] = _scalar(name, rest.pop(name))
            except ValidationFailed as error:
                issues.extend(error.issues)
    body: dict[str, Any] | None = None
    if tool.method == "GET":
        issues.extend(
            Issue("unknown_member", name, "This tool takes no such argument.") for name in rest
        )
    else:
        # Unknown members are the body's to refuse, as they are over REST.
        body = rest
    if issues:
        raise ValidationFailed(issues=issues)
    path = tool.path.format(**values) if tool.route is None else tool.path
    return _Request(path=path, query=query, body=body, project_id=project_id)


def _inner_environ(outer: Outer, method: str, call: _Request) -> tuple[dict[str, Any], bytes]:
    """The WSGI environ and body of the REST request a call stands for."""
    # `allow_nan` keeps a NaN an agent sent as the `NaN` REST would refuse, not a null.
    body = b"" if call.body is None else json.dumps(call.body, allow_nan=True).encode()
    meta = outer.META
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": call.path,
        "QUERY_STRING": urlencode(call.query),
        "SERVER_NAME": meta.get("SERVER_NAME", "localhost"),
        "SERVER_PORT": meta.get("SERVER_PORT", "80"),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": meta.get("REMOTE_ADDR", ""),
        "wsgi.url_scheme": outer.scheme,
        "wsgi.input": io.BytesIO(body),
        "HTTP_AUTHORIZATION": meta.get("HTTP_AUTHORIZATION", ""),
        "HTTP_ACCEPT": "application/json",
    }
    if "HTTP_HOST" in meta:
        environ["HTTP_HOST"] = meta["HTTP_HOST"]
    if call.body is not None:
        environ["CONTENT_TYPE"] = "application/json"
        environ["CONTENT_LENGTH"] = str(len(body))
    if call.project_id is not None:
        environ["HTTP_X_SERVICE_PROJECT_ID"] = call.project_id
    return environ, body


# Where a tool's paths go, by the URLconf and the tool's path: the view the first of them
# resolved to and its endpoint, when that endpoint's route alone tells the paths it serves
# (config/api/routes.py): a later path it reads goes where Django's resolver would send it,
# with the same arguments, and any other path is resolved.
_endpoints: dict[tuple[Any, str], tuple[Callable[..., Any], Endpoint] | None] = {}


@receiver(setting_changed)
def _endpoints_forget(*, setting: str, **kwargs: Any) -> None:
    if setting == "ROOT_URLCONF":
        _endpoints.clear()


def _resolved(tool: AgentTool, path: str) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The view `path` (one of `tool`'s) resolves to and its arguments, as Django's
    resolver gives them; resolved by Django for a tool's first path (resolving walks the
    URLconf's patterns one by one, which cost a tool call as much as its audit row), then
    read by the route that matched when it can be."""
    urlconf = get_urlconf()
    at = (urlconf or settings.ROOT_URLCONF, tool.path)
    known = _endpoints.get(at)
    if known is not None:
        view, endpoint = known
        kwargs = endpoint.read(path)
        if kwargs is not None:
            return view, kwargs
    match = resolve(path)
    if at not in _endpoints:
        reader = reader_of(get_resolver(urlconf), path)
        _endpoints[at] = None if reader is None else (match.func, reader)
    return match.func, match.kwargs


def _served(
    view_function: Callable[..., Any],
    kwargs: dict[str, Any],
    method: str,
    environ: dict[str, Any],
    body: bytes,
    settled: Settled,
) -> tuple[int, Any]:
    """The endpoint's status and JSON answer. A view that serves `method` on the lean path
    (config/api/lean.py) answers there, as it does a client's request, without DRF's
    dispatch; any other through its DRF view."""
    view = getattr(view_function, "cls", None)
    if view is not None and method in getattr(view, "lean_methods", ()):
        request = lean_request(environ, body)
        request_settle(request, settled)
        answer = view.lean_dispatch(request, kwargs)
        return answer.status, orjson.loads(answer.body) if answer.body else None
    inner = WSGIRequest(environ)
    request_settle(inner, settled)
    return _answer(view_function(inner, **kwargs))


def _answer(response: HttpResponseBase) -> tuple[int, Any]:
    if isinstance(response, Response) and not response.is_rendered:
        response.render()
    content = getattr(response, "content", b"")
    return response.status_code, orjson.loads(content) if content else None


def _structured(tool: AgentTool, body: dict[str, Any]) -> dict[str, Any] | None:
    """The endpoint's `data` as it is (a list with its `metadata`); `null` stays None."""
    data = body.get("data")
    if tool.listing is not None:
        return {"items": data, "metadata": body.get("metadata")}
    if data is None or isinstance(data, dict):
        return data
    return {"data": data}


def _routed(catalog: Catalog, tool: AgentTool, key: KeyRecord, call: _Request) -> _Request:
    """The endpoint a routed tool calls, once the project is checked as the header is."""
    project, access = project_access(key=key, project_id=project_id_selected(call.project_id, key))
    operation, resource_id = catalog.routes[tool.name](
        project=project, access=access, arguments=call.body or {}
    )
    target = catalog.execute_paths.get(operation)
    if target is None:
        raise NotFound("No tool executes this prepared action.")
    if callable(target):
        path = target(project=project, resource_id=resource_id)
    else:
        path = target.format(resource_id=quote(resource_id, safe=""))
    return _Request(
        path=path,
        query=call.query,
        body=call.body,
        project_id=call.project_id,
        checked=(project, access),
    )


def tool_run(
    *,
    catalog: Catalog,
    name: str,
    arguments: dict[str, Any] | None,
    key: KeyRecord,
    rate_limit: RateDecision | None,
    outer: Outer,
) -> ToolOutcome:
    """Runs one tool call as its REST request and reads the answer back. `key` and
    `rate_limit` are what the `/mcp` request decided (the key authenticated, the call
    counted); the REST request takes them as they are."""
    tool = catalog.tools.get(name)
    if tool is None:
        return _error_outcome(NotFound(f"No tool is named `{name}`; `tools/list` names them."))
    # Every failure is a tool result, never a protocol error: the agent reads it and retries.
    try:
        call = _split(tool, arguments or {})
        if tool.route is not None:
            call = _routed(catalog, tool, key, call)
        view_function, kwargs = _resolved(tool, call.path)
        project, access = call.checked or (None, None)
        settled = Settled(key=key, rate_limit=rate_limit, project=project, access=access)
        environ, content = _inner_environ(outer, tool.method, call)
        status, body = _served(view_function, kwargs, tool.method, environ, content, settled)
    except Resolver404:
        return _error_outcome(NotFound("No such resource."))
    except Exception as exc:
        return _error_outcome(exc)
    if status >= 400 or not isinstance(body, dict):
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            logger.error("Tool %s got an answer without an error object (%s)", name, status)
            return _error_outcome(ServiceError())
        return _failure(status, error)
    return ToolOutcome(status=status, structured=_structured(tool, body), is_error=False)


def project_id_text(value: Any) -> str | None:
    """A project id argument as the audit stores it: only a well-formed one."""
    return value if isinstance(value, str) and _UUID.fullmatch(value) else None
