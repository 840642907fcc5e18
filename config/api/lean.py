"""The lean path: the API's busiest endpoints answered without Django's request handler,
its middleware stack and DRF's dispatch, by the same view code.

A view class takes part by naming the methods it serves so (`lean_methods`) and giving a
`lean_dispatch(request) -> LeanAnswer` classmethod (tenancy/api/base.py ProjectView: the
same authentication, rate limit, project and scope checks, handler and error envelope as
its DRF dispatch), and a `lean_takes(environ, body)` classmethod that may pass a request
to Django once it has read it, before anything is checked or counted (the MCP endpoint,
agent/views.py, takes only the tool calls it answers exactly as the SDK does). This
module knows no app: it finds those views in the URLconf and serves the requests that
match one, with the route and the converted arguments Django's resolver would give, for
every path, without walking the URLconf's patterns one by one as it does: a path without
parameters is found in a dict of the resolver's answers, and a path with parameters
(`/contacts/<uuid:contact_id>`) is read by the lean view's own route when no pattern before
it in the URLconf can match a path it matches (config/api/routes.py says why that is
exact); any other lean route's paths are resolved by Django's resolver.

What the handler and middleware stack would have done around such a request is done here
too: the Host check, the request id (`X-Request-Id`), the request metrics, the work of the
`request_started` and `request_finished` signals (database connections are tidied there),
the headers the security middleware adds, and `Content-Length`. Anything out of the
ordinary (a Host Django would refuse, an `Accept` other than JSON or anything unless the
view reads it itself (`lean_own_accept`), a body that is not plain `application/json` or
is compressed, a forwarded host) is passed to Django untouched, which answers it as it
always has: the lean path only takes requests whose answer it gives exactly as Django
would (tests/config/test_lean.py sends every case both ways).
"""

import functools
import io
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.client import responses
from typing import Any, Protocol

import orjson
from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.redis import RedisCache
from django.core.handlers.base import reset_urlconf
from django.core.signals import setting_changed
from django.db import close_old_connections, connections, reset_queries
from django.dispatch import receiver
from django.http import QueryDict
from django.http.request import split_domain_port, validate_host
from django.urls import Resolver404, ResolverMatch, URLResolver, get_resolver, get_urlconf
from django.utils.module_loading import import_string

from config.api.envelope import error_body
from config.api.parsers import body_limit, json_body
from config.api.routes import Endpoint, endpoints, readable
from config.libinternals import connections_opened, receiver_keys
from config.observability.metrics import request_observe
from config.observability.requestcontext import request_id_from, request_id_reset, request_id_set

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

# What a client sends when it takes JSON or anything (config/api/negotiation.py).
_ACCEPTS = frozenset({"", "*/*", "application/json"})
_CONTENT_TYPES = frozenset({"application/json", "application/json; charset=utf-8"})


@dataclass(slots=True)
class LeanAnswer:
    """A view's answer on the lean path: its status, headers and rendered body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


class LeanRequest:
    """The request a lean view sees: what its DRF handler reads from a DRF Request
    (`method`, `META`, `data`, `query_params`, `auth`, `_request`), and the attributes
    its checks set on it (`project`, `access`, `rate_limit`)."""

    def __init__(self, environ: dict[str, Any], body: bytes, parse: "BodyParser") -> None:
        self.method: str = environ["REQUEST_METHOD"]
        self.META = environ
        self.body = body
        self.auth: Any = None
        # The project the checks settle on (tenancy/api/permissions.py), None until then.
        self.project: Any = None
        # The view instance serving it (its `max_body_bytes` bounds the body).
        self.view: Any = None
        self._parse = parse
        self._data: Any = None
        self._parsed = False
        self._query: QueryDict | None = None

    @property
    def _request(self) -> "LeanRequest":
        # DRF's Request keeps the Django request here; the checks read and set attributes on
        # it (the rate limit decision, a settled key), which are this object's own.
        return self

    @property
    def data(self) -> Any:
        """The body as JSON, parsed at first use (after the key checks, as DRF does)."""
        if not self._parsed:
            self._parsed = True
            self._data = self._parse(self) if self.body else {}
        return self._data

    @property
    def scheme(self) -> str:
        """`http` or `https`, as Django's request reads it (behind a proxy, its header)."""
        return "https" if _is_secure(self.META) else "http"

    @property
    def query_params(self) -> QueryDict:
        if self._query is None:
            self._query = QueryDict(self.META.get("QUERY_STRING", ""))
        return self._query


class BodyParser(Protocol):
    def __call__(self, request: LeanRequest) -> Any: ...


class LeanView(Protocol):
    lean_methods: frozenset[str]
    # Whether the view reads `Accept` itself (nothing in Django's handler or middleware
    # does), so that a request takes the lean path whatever it accepts; a DRF view
    # negotiates, so only JSON or anything is taken.
    lean_own_accept: bool

    @classmethod
    def lean_takes(cls, environ: dict[str, Any], body: bytes) -> bool:
        """Whether the view answers this request on the lean path exactly as through
        Django; False passes it to Django. Runs before anything is checked or counted, so
        it only reads the request (and may keep what it read in `environ`)."""
        ...

    @classmethod
    def lean_dispatch(cls, request: LeanRequest, kwargs: dict[str, Any]) -> LeanAnswer: ...


@dataclass(frozen=True, slots=True)
class Route:
    view: type[LeanView]
    # The URL pattern's name, as the request metrics label routes.
    name: str


@dataclass(frozen=True, slots=True)
class Match:
    """A request's lean route and the arguments its path gave (none for a plain path)."""

    route: Route
    kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LeanTable:
    """The lean routes of one URLconf, as `LeanFront.match` reads them."""

    resolver: URLResolver
    # (method, path) -> Django's resolver's answer, for each lean view at a path with no
    # parameters.
    fixed: dict[tuple[str, str], Match]
    # method -> the lean views at paths with parameters that their own route reads
    # (config/api/routes.py `readable`), in the URLconf's order.
    read: dict[str, tuple[tuple[Endpoint, Route], ...]]
    # method -> what the paths of the other lean views with parameters start with: a path
    # that starts so is resolved by Django's resolver.
    resolved: dict[str, tuple[str, ...]]


@dataclass
class LeanFront:
    """A WSGI application: the lean routes of the URLconf served here, every other request
    passed to `django` (the full handler)."""

    django: WsgiApp
    _table: LeanTable | None = field(default=None, init=False)

    def routes(self) -> LeanTable:
        """The lean routes of the URLconf the resolver reads now (the thread's own, set for
        a request, or the root one), made again when that URLconf changes."""
        resolver = get_resolver(get_urlconf())
        table = self._table
        if table is None or table.resolver is not resolver:
            table = self._table = lean_table(resolver)
        return table

    def match(self, method: str, path: str) -> Match | None:
        """The lean route serving `method` at `path`, or None when Django serves it: what
        Django's resolver answers for every path (config/api/routes.py says why)."""
        table = self.routes()
        fixed = table.fixed.get((method, path))
        if fixed is not None:
            return Match(fixed.route, dict(fixed.kwargs))
        for endpoint, route in table.read.get(method, ()):
            kwargs = endpoint.read(path)
            if kwargs is not None:
                return Match(route, kwargs)
        leads = table.resolved.get(method)
        if not leads or not path.startswith(leads):
            return None
        try:
            found = table.resolver.resolve(path)
        except Resolver404:
            return None
        return _lean_match(found, method)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = self.match(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""))
        if match is None or not _ordinary(environ, match.route.view.lean_own_accept):
            return self.django(environ, start_response)
        body = _read_body(environ)
        if body is None or not match.route.view.lean_takes(environ, body):
            return self.django(environ, start_response)
        answer = serve(match, environ, body)
        # The reason phrase as Django writes it.
        reason = responses.get(answer.status, "Unknown Status Code")
        start_response(f"{answer.status} {reason}", answer.headers)
        return [answer.body]


def _lean_match(found: ResolverMatch, method: str) -> Match | None:
    """The lean route of the resolver's answer, None unless its view serves `method` leanly."""
    view = getattr(found.func, "view_class", None)
    if view is None or method not in getattr(view, "lean_methods", ()):
        return None
    # As the request metrics name a route (config/api/middleware.py route_of).
    name = found.view_name if found.url_name else str(found.route)
    return Match(Route(view=view, name=name), dict(found.kwargs))


def lean_table(resolver: URLResolver | None = None) -> LeanTable:
    """Every view of the URLconf that serves methods leanly, by how its paths are told:
    a path with no parameters resolved once here, a route that alone tells its paths, or
    Django's resolver for the paths that start as the route does."""
    resolver = resolver or get_resolver()
    listed = endpoints(resolver)
    fixed: dict[tuple[str, str], Match] = {}
    read: dict[str, list[tuple[Endpoint, Route]]] = {}
    resolved: dict[str, set[str]] = {}
    for at, endpoint in enumerate(listed):
        view = getattr(endpoint.pattern, "callback", None)
        view = getattr(view, "view_class", None)
        methods = getattr(view, "lean_methods", None)
        if view is None or not methods:
            continue
        path = endpoint.path
        if path is not None:
            found = resolver.resolve(path)
            for method in methods:
                match = _lean_match(found, method)
                if match is not None:
                    fixed[method, path] = match
        elif readable(endpoint, listed[:at]):
            for method in methods:
                read.setdefault(method, []).append((endpoint, Route(view, endpoint.name)))
        else:
            for method in methods:
                resolved.setdefault(method, set()).add(endpoint.lead)
    return LeanTable(
        resolver=resolver,
        fixed=fixed,
        read={method: tuple(routes) for method, routes in read.items()},
        resolved={method: tuple(sorted(leads)) for method, leads in resolved.items()},
    )


def _ordinary(environ: dict[str, Any], own_accept: bool) -> bool:
    """Whether Django would treat the request as the lean path does: an allowed Host, JSON
    or anything accepted (any `Accept`, for a view that reads it itself), a plain JSON
    body or none."""
    if not own_accept and environ.get("HTTP_ACCEPT", "") not in _ACCEPTS:
        return False
    # A compressed body is read by the view's parser on Django's path (GzipJsonParser).
    if environ.get("HTTP_CONTENT_ENCODING", "identity") not in ("", "identity"):
        return False
    content_type = environ.get("CONTENT_TYPE")
    if content_type is None:
        # With no media type DRF reads no body as `{}` and refuses one with 415.
        if environ.get("CONTENT_LENGTH", "") not in {"", "0"}:
            return False
    elif content_type not in _CONTENT_TYPES:
        return False
    if settings.USE_X_FORWARDED_HOST and "HTTP_X_FORWARDED_HOST" in environ:
        return False
    if not _host_allowed(environ.get("HTTP_HOST", "")):
        return False
    return not (settings.SECURE_SSL_REDIRECT and not _is_secure(environ))


# Each Host value's decision, as Django's Host check makes it from the settings: kept for
# as many hosts as any deployment serves (a client may send anything), and forgotten when a
# setting changes (tests).
@functools.lru_cache(maxsize=256)
def _host_allowed(host: str) -> bool:
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, _allowed_hosts())


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        # As Django's own Host check does with DEBUG on and no hosts set.
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _is_secure(environ: dict[str, Any]) -> bool:
    header = settings.SECURE_PROXY_SSL_HEADER
    if header:
        name, value = header
        forwarded = environ.get(name)
        if forwarded is not None:
            return bool(forwarded.split(",", 1)[0].strip() == value)
    return bool(environ.get("wsgi.url_scheme") == "https")


def _read_body(environ: dict[str, Any]) -> bytes | None:
    """The whole body (the front in config/net/rsgiserver.py has read it already); None
    when its length is not declared, which Django reads its own way. The stream is put
    back so Django can read it if the request is passed on."""
    length = environ.get("CONTENT_LENGTH") or "0"
    if not length.isdigit():
        return None
    size = int(length)
    stream = environ.get("wsgi.input")
    body = stream.read(size) if size and stream is not None else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


# What SecurityMiddleware and XFrameOptionsMiddleware add to an API answer, by whether
# HSTS applies (SECURE_HSTS_SECONDS set, a secure request): made from the settings once,
# and again after a setting changes (tests), instead of reading six settings a request.
_SECURITY_HEADERS: dict[bool, tuple[tuple[str, str], ...]] = {}


def _security_headers(environ: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What SecurityMiddleware and XFrameOptionsMiddleware add to an API answer."""
    hsts = bool(settings.SECURE_HSTS_SECONDS) and _is_secure(environ)
    headers = _SECURITY_HEADERS.get(hsts)
    if headers is None:
        headers = _SECURITY_HEADERS[hsts] = tuple(_security_headers_made(hsts))
    return headers


@receiver(setting_changed)
def _security_headers_forget(**kwargs: Any) -> None:
    _SECURITY_HEADERS.clear()


def _security_headers_made(hsts: bool) -> list[tuple[str, str]]:
    headers = []
    if hsts:
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            value += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            value += "; preload"
        headers.append(("Strict-Transport-Security", value))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append(("X-Content-Type-Options", "nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        if not isinstance(policy, str):
            policy = ",".join(policy)
        headers.append(("Referrer-Policy", policy))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    headers.append(("X-Frame-Options", getattr(settings, "X_FRAME_OPTIONS", "DENY").upper()))
    return headers


# Django's own receivers of the request signals, as each signal lists them: started resets
# the query log and closes database connections that are broken or past CONN_MAX_AGE;
# finished closes such connections again, then the caches' and resets the URLconf.
_NO_SENDER = id(None)
_STARTED = ((id(reset_queries), _NO_SENDER), (id(close_old_connections), _NO_SENDER))
_FINISHED = (
    (id(close_old_connections), _NO_SENDER),
    (id(close_caches), _NO_SENDER),
    (id(reset_urlconf), _NO_SENDER),
)


def request_started(environ: dict[str, Any]) -> None:
    """What Django's handler does at the start of a request by sending `request_started`.
    While its receivers are Django's own, they are called here in the signal's order
    without its dispatch (looking up the live receivers under a lock, for both signals,
    cost as much as the receivers' work); with any other receiver connected, or one of
    them disconnected (as tests do), the signal is sent."""
    if receiver_keys(signals.request_started) != _STARTED:
        signals.request_started.send(sender=LeanFront, environ=environ)
        return
    # `reset_queries`, then `close_old_connections`: each acts on every made connection
    # alone, so one pass over them does both.
    for db in connections_opened(connections):
        db.queries_log.clear()
        db.close_if_unusable_or_obsolete()


def request_finished() -> None:
    """What Django's handler does at the end of a request by sending `request_finished`,
    as `request_started` does it."""
    if receiver_keys(signals.request_finished) != _FINISHED:
        signals.request_finished.send(sender=LeanFront)
        return
    for db in connections_opened(connections):
        db.close_if_unusable_or_obsolete()
    if not _caches_close_nothing():
        close_caches()
    reset_urlconf(sender=None)


# Cache backends whose `close` does nothing (Django's Redis cache, and every backend that
# keeps the base class's): with only those configured, `close_caches` has nothing to do.
_CLOSE_NOTHING = frozenset({BaseCache.close, RedisCache.close})


@functools.cache
def _caches_close_nothing() -> bool:
    """Whether closing the configured caches does nothing, read off the settings once (and
    again after a setting changes, in tests)."""
    backends = [import_string(entry["BACKEND"]) for entry in settings.CACHES.values()]
    return all(backend.close in _CLOSE_NOTHING for backend in backends)


@receiver(setting_changed)
def _settings_decisions_forget(**kwargs: Any) -> None:
    _host_allowed.cache_clear()
    _caches_close_nothing.cache_clear()


def serve(match: Match, environ: dict[str, Any], body: bytes) -> LeanAnswer:
    """Answers one request by its lean view, with what Django's handler and middleware
    would have done around it."""
    route = match.route
    started = time.perf_counter()
    request_id = request_id_from(environ.get("HTTP_X_REQUEST_ID"))
    token = request_id_set(request_id)
    request_started(environ)
    try:
        try:
            answer = route.view.lean_dispatch(LeanRequest(environ, body, _json_body), match.kwargs)
        except Exception:
            logger.exception("The lean path failed to answer %s", route.name)
            answer = _failure()
    finally:
        try:
            request_finished()
        finally:
            request_id_reset(token)
    answer.headers.extend(_security_headers(environ))
    answer.headers.append(("Content-Length", str(len(answer.body))))
    answer.headers.append(("X-Request-Id", request_id))
    request_observe(
        route=route.name,
        method=environ["REQUEST_METHOD"],
        status=answer.status,
        seconds=time.perf_counter() - started,
    )
    return answer


def lean_request(environ: dict[str, Any], body: bytes) -> LeanRequest:
    """A request for a lean view's `lean_dispatch` made inside the process (an agent
    tool's REST call), its body read as the API's JSON parser reads it."""
    return LeanRequest(environ, body, _json_body)


def _json_body(request: LeanRequest) -> Any:
    """The body as the API's JSON parser reads it, under the view's body limit."""
    return json_body(
        request.body,
        limit=body_limit({"view": request.view}),
        declared=len(request.body),
        encoding=settings.DEFAULT_CHARSET,
    )


def _failure() -> LeanAnswer:
    body = orjson.dumps(
        error_body(status=500, code="internal_error", message="Something went wrong on our side.")
    )
    return LeanAnswer(500, [("Content-Type", "application/json")], body)
