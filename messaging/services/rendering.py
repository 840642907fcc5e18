"""Liquid rendering of template versions, for previews and for every sender.

Templates are written by customers, so they run in a sandbox: no file system, no
`include` or `render` of other templates, bounded loops, output and local variables. An
undefined variable renders empty and is reported by its dotted path
(`contact.fields.first_name`), so a preview can say what a real send would miss.

Variables: `contact` (`id`, `email`, `external_id`, `fields`), `preferences_url` (the
contact's preference page; like `contact`, undefined without one), `event` (`event`,
`payload`), `data` (the caller's data) and `project` (`id`, `name`); senders may add
more (automations add `steps`). Values inserted into `html` are HTML-escaped; `subject`,
`text` and push content are plain text.
"""

import contextvars
import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from liquid import BoundTemplate, Environment, RenderContext, Token, Undefined
from liquid.exceptions import LiquidError
from liquid.undefined import UNDEFINED

from config.api.errors import Issue
from contacts.models import Contact
from messaging.errors import TemplateRenderFailed
from messaging.models.templates import Channel, TemplateVersion
from messaging.services.liquidbounds import RenderBudget, bound_work
from messaging.services.tokens import preferences_url
from tenancy.models import Project

# The content members of each channel, in the order they are rendered and reported.
EMAIL_FIELDS = ("subject", "html", "text")
PUSH_FIELDS = ("title", "body", "data")
CHANNEL_FIELDS = {Channel.EMAIL: EMAIL_FIELDS, Channel.PUSH: PUSH_FIELDS}

# The sandbox's bounds: a template cannot make a worker loop, allocate or write without end.
LOOP_ITERATION_LIMIT = 10_000
OUTPUT_LIMIT_BYTES = 2_000_000
LOCAL_NAMESPACE_LIMIT_BYTES = 1_000_000


# --- the sandbox ---------------------------------------------------------------------------

_recorded: contextvars.ContextVar[dict[str, None] | None] = contextvars.ContextVar(
    "undefined_variables", default=None
)


@contextmanager
def _recording() -> Iterator[dict[str, None]]:
    """Collects the undefined variables of the renders inside it (an ordered set)."""
    seen: dict[str, None] = {}
    token = _recorded.set(seen)
    try:
        yield seen
    finally:
        _recorded.reset(token)


def dotted_path(segments: list[object]) -> str:
    """`["contact", "fields", "x"]` as `contact.fields.x`; indexes and odd keys in brackets."""
    parts = [str(segments[0])]
    for segment in segments[1:]:
        if isinstance(segment, str) and segment.isidentifier():
            parts.append(f".{segment}")
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


_MISSING = object()


class _ReportingContext(RenderContext):
    """Reports every variable the template looks up and does not find, by the whole path
    it wrote (`contact.fields.x`; the library's Undefined knows only the root). Lookups are
    the place to record: the library also makes Undefined values of its own (a for loop's
    missing `parentloop`) that no template asked for. It also holds the render's work
    budget (messaging/services/liquidbounds.py), checked at every lookup."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = RenderBudget()

    def get(
        self, path: list[object], *, token: Token | None, default: object = UNDEFINED
    ) -> object:
        self.budget.check(token)
        value = super().get(path, token=token, default=_MISSING)
        if value is _MISSING or isinstance(value, Undefined):
            if default is not UNDEFINED:
                return default
            name = dotted_path(path)
            seen = _recorded.get()
            if seen is not None:
                seen.setdefault(name, None)
            return self.env.undefined(name, token=token)
        return value


class _SandboxTemplate(BoundTemplate):
    context_class = _ReportingContext


class SandboxEnvironment(Environment):
    """Liquid without access to anything but the variables given, and with bounds."""

    loop_iteration_limit: ClassVar[int | None] = LOOP_ITERATION_LIMIT
    output_stream_limit: ClassVar[int | None] = OUTPUT_LIMIT_BYTES
    local_namespace_limit: ClassVar[int | None] = LOCAL_NAMESPACE_LIMIT_BYTES
    template_class = _SandboxTemplate

    def setup_tags_and_filters(self, *, extra: bool = False) -> None:
        super().setup_tags_and_filters(extra=False)
        # Partials would read other templates (or files): a template stands alone.
        for name in ("include", "render"):
            self.tags.pop(name, None)

    def from_string(self, source: str, *args: Any, **kwargs: Any) -> BoundTemplate:
        template = super().from_string(source, *args, **kwargs)
        bound_work(template)
        return template


_PLAIN = SandboxEnvironment()
_HTML = SandboxEnvironment(autoescape=True)


# Sources up to this size are parsed once per process (campaigns render one version
# thousands of times); the cache holds at most CACHE_SIZE of them.
CACHED_SOURCE_LIMIT = 65_536
CACHE_SIZE = 256


def _parse(source: str, html: bool) -> BoundTemplate:
    return (_HTML if html else _PLAIN).from_string(source)


_parse_cached = functools.lru_cache(maxsize=CACHE_SIZE)(_parse)


def _parsed(source: str, html: bool) -> BoundTemplate:
    if len(source) > CACHED_SOURCE_LIMIT:
        return _parse(source, html)
    return _parse_cached(source, html)


# --- validation ----------------------------------------------------------------------------


def _line_of(source: str, index: int) -> int:
    return source.count("\n", 0, max(index, 0)) + 1


def _error_line(error: LiquidError, source: str) -> int:
    where = error.context()
    # Errors without a position (a block never closed) are found at the end of the source.
    return where[0] if where is not None else source.count("\n") + 1


def liquid_problem(source: str, *, html: bool = False) -> str | None:
    """Why `source` is not a valid template (a message naming the line), or None."""
    try:
        template = _parsed(source, html)
    except LiquidError as error:
        return f"Invalid Liquid on line {_error_line(error, source)}: {error.message}."
    except RecursionError:
        return "Invalid Liquid: the template nests too deeply."
    env = _HTML if html else _PLAIN
    for name, spans in template.analyze(include_partials=False).filters.items():
        if name not in env.filters:
            line = _line_of(source, spans[0].index)
            return f"Invalid Liquid on line {line}: unknown filter '{name}'."
    return None


def _data_strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside a push `data` value with its dotted path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _data_strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _data_strings(item, f"{path}.{index}")


def liquid_issues(content: Mapping[str, Any]) -> list[Issue]:
    """One issue per content member (or string inside `data`) that is not valid Liquid."""
    issues: list[Issue] = []
    for name, value in content.items():
        if value is None:
            continue
        sources = _data_strings(value, name) if name == "data" else [(name, value)]
        for path, source in sources:
            problem = liquid_problem(source, html=name == "html")
            if problem is not None:
                issues.append(Issue(code="invalid_liquid", path=path, message=problem))
    return issues


# --- rendering -----------------------------------------------------------------------------


class EventLike(Protocol):
    """What templates see of an event: events.models.Event, or a preview's sample."""

    @property
    def event(self) -> str: ...

    @property
    def payload(self) -> Any: ...


@dataclass(frozen=True)
class SampleEvent:
    event: str
    payload: dict[str, Any] = field(default_factory=dict)


# The variable of the contact's preference page (`/p/{token}`), set with `contact`.
PREFERENCES_URL = "preferences_url"


def template_context(
    *,
    project: Project,
    contact: Contact | None = None,
    event: EventLike | None = None,
    data: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The variables a template renders with. A missing contact or event stays undefined,
    so `{{ contact.email }}` without one is reported rather than silently empty; so does
    `preferences_url`, the contact's preference page, which only a contact has."""
    variables: dict[str, Any] = {
        "project": {"id": str(project.id), "name": project.name},
        "data": dict(data or {}),
    }
    if contact is not None:
        variables["contact"] = contact_variables(
            contact_id=contact.id,
            email=contact.email,
            external_id=contact.external_id,
            fields=dict(contact.fields or {}),
        )
        if contact.id is not None:
            # A test run for an address no contact has renders with an unsaved contact,
            # which has no page.
            variables[PREFERENCES_URL] = preferences_url(contact.id)
    if event is not None:
        variables["event"] = {"event": event.event, "payload": event.payload}
    variables.update(extra or {})
    return variables


def contact_variables(
    *, contact_id: Any, email: str | None, external_id: str | None, fields: Any
) -> dict[str, Any]:
    """What templates see of a contact: the `contact` variable."""
    return {"id": str(contact_id), "email": email, "external_id": external_id, "fields": fields}


@dataclass(frozen=True)
class RenderedEmail:
    subject: str | None
    html: str | None
    text: str | None
    undefined_variables: list[str]

    def content(self) -> dict[str, Any]:
        return {"subject": self.subject, "html": self.html, "text": self.text}


@dataclass(frozen=True)
class RenderedPush:
    title: str | None
    body: str | None
    data: dict[str, Any] | None
    undefined_variables: list[str]

    def content(self) -> dict[str, Any]:
        return {"title": self.title, "body": self.body, "data": self.data}


def _render_source(
    source: str, variables: Mapping[str, Any], *, path: str, html: bool = False
) -> str:
    try:
        return _parsed(source, html).render(variables)
    except LiquidError as error:
        line = _error_line(error, source)
        raise TemplateRenderFailed(
            details=f"{path}, line {line}: {error.message}",
            issues=[Issue(code="render_error", path=path, message=str(error.message))],
        ) from None
    except (ArithmeticError, ValueError, TypeError, RecursionError) as error:
        # A filter given data it cannot handle; the template itself parsed.
        raise TemplateRenderFailed(
            details=f"{path}: {error}",
            issues=[Issue(code="render_error", path=path, message=str(error))],
        ) from None


def _render_field(
    source: str | None, variables: Mapping[str, Any], *, path: str, html: bool = False
) -> str | None:
    return None if source is None else _render_source(source, variables, path=path, html=html)


def _render_data(value: Any, variables: Mapping[str, Any], path: str) -> Any:
    if isinstance(value, str):
        return _render_source(value, variables, path=path)
    if isinstance(value, Mapping):
        return {key: _render_data(item, variables, f"{path}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_render_data(item, variables, f"{path}.{i}") for i, item in enumerate(value)]
    return value


def render_email(version: TemplateVersion, variables: Mapping[str, Any]) -> RenderedEmail:
    """An email version's subject, html and text (None where the version has none)."""
    with _recording() as seen:
        subject = _render_field(version.subject, variables, path="subject")
        html = _render_field(version.html, variables, path="html", html=True)
        text = _render_field(version.text, variables, path="text")
    return RenderedEmail(subject=subject, html=html, text=text, undefined_variables=list(seen))


def render_push(version: TemplateVersion, variables: Mapping[str, Any]) -> RenderedPush:
    """A push version's title, body and data; every string inside `data` is Liquid too."""
    with _recording() as seen:
        title = _render_field(version.title, variables, path="title")
        body = _render_field(version.body, variables, path="body")
        data = None if version.data is None else _render_data(version.data, variables, "data")
    return RenderedPush(title=title, body=body, data=data, undefined_variables=list(seen))


def render_version(
    version: TemplateVersion, variables: Mapping[str, Any]
) -> RenderedEmail | RenderedPush:
    """The version rendered for its template's channel."""
    if version.template.channel == Channel.PUSH:
        return render_push(version, variables)
    return render_email(version, variables)
