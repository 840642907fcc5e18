"""Liquid rendering of template versions, for previews and for every sender.

Templates are written by customers, so they run in a sandbox: no file system, no
`include` or `render` of other templates, bounded loops, output and local variables. An
undefined variable renders empty and is reported by its dotted path
(`contact.fields.first_name`), so a preview can say what a real send would miss.

Variables: `contact` (`id`, `email`, `external_id`, `fields`), `event` (`event`,
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
from typing import Any, ClassVar, Protocol, cast

from liquid import BoundTemplate, Environment, RenderContext, Token, Undefined
from liquid.builtin.content import ContentNode
from liquid.builtin.expressions import FilteredExpression, Path
from liquid.builtin.output import OutputNode
from liquid.exceptions import LiquidError
from liquid.stringify import to_liquid_string
from liquid.undefined import UNDEFINED
from markupsafe import escape

from config.api.errors import Issue
from contacts.models import Contact
from messaging.errors import TemplateRenderFailed
from messaging.models.templates import Channel, TemplateVersion
from messaging.services.liquidbounds import RenderBudget, bound_work
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


def template_context(
    *,
    project: Project,
    contact: Contact | None = None,
    event: EventLike | None = None,
    data: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The variables a template renders with. A missing contact or event stays undefined,
    so `{{ contact.email }}` without one is reported rather than silently empty."""
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


# --- one version for many contacts -----------------------------------------------------------


# Path segments liquid resolves specially (`.size` of a list, `.first` of a hash ...).
_SPECIAL_SEGMENTS = frozenset({"size", "first", "last"})


class _NamePath:
    """An output statement that is a bare path of names (`{{ contact.fields.city }}`):
    looked up in plain dicts, which is what liquid does for such a path when every step
    is a dict holding the name; any other case is left to the expression."""

    __slots__ = ("expression", "segments")

    def __init__(self, expression: Any, segments: list[str]) -> None:
        self.expression, self.segments = expression, segments

    def lookup(self, scope: dict[str, Any]) -> Any:
        value: Any = scope
        for segment in self.segments:
            if type(value) is not dict:
                return _MISSING
            value = value.get(segment, _MISSING)
        return value


def _render_parts(
    parts: list[Any], scope: dict[str, Any], context: Any, autoescape: bool, limit: int | None
) -> str | None:
    """A template's statements rendered in order: text as is, a plain variable path looked
    up in `scope`, any other output expression evaluated in `context`. None when anything
    raises or the output passes `limit` UTF-8 bytes: the ordinary render then runs and
    reports it, so the error is the sandbox's own."""
    out: list[str] = []
    context.budget.reset()  # one context serves every contact: each render its own budget
    try:
        for part in parts:
            if type(part) is str:
                out.append(part)
                continue
            if type(part) is _NamePath:
                value = part.lookup(scope)
                if type(value) is str:
                    out.append(escape(value) if autoescape else value)
                    continue
                part = part.expression
            out.append(to_liquid_string(part.evaluate(context), autoescape))
    except Exception:
        return None
    rendered = "".join(out)
    # A character is at most four bytes: only a long output is encoded to be measured.
    if limit is not None and len(rendered) * 4 > limit and len(rendered.encode()) > limit:
        return None
    return rendered


def _part(node: Any) -> Any:
    """A flat template's node as `_Member` renders it: text, a name path or an expression."""
    if isinstance(node, ContentNode):
        return node.text
    expression = node.expression
    if type(expression) is FilteredExpression and not expression.filters:
        path = expression.left
        if type(path) is Path and all(
            type(segment) is str and segment not in _SPECIAL_SEGMENTS for segment in path.path
        ):
            # The check above saw that every segment is a str.
            return _NamePath(expression, list(cast("list[str]", path.path)))
    return expression


class _Member:
    """One content member of a version rendered for contact after contact (a campaign's
    batch), with the same result as `_render_source` with the whole context each time, but
    doing less per contact:

    - a member that never reads `contact` (liquid's static analysis of its variables) is
      rendered once, for the first contact, and that result (or failure) serves them all;
    - a member made only of text and output statements (`{{ ... }}`, no tags, so nothing
      a render could change in its context) keeps one render context and evaluates the
      statements with it, swapping the `contact` variable: no context, buffer and scope
      per render. Any error, or an output past the sandbox's limit, is rendered again the
      ordinary way, which reports it exactly as a lone render would;
    - anything else renders the ordinary way."""

    def __init__(self, source: str | None, shared: dict[str, Any], *, path: str, html: bool):
        self.source, self.shared, self.path, self.html = source, shared, path, html
        self.constant = False
        self.once: tuple[str | None, TemplateRenderFailed | None] | None = None
        self.parts: list[Any] | None = None
        if source is None:
            return
        try:
            template = _parsed(source, html)
        except (LiquidError, RecursionError):
            return  # every render reports the error
        roots = [
            variable.segments[0]
            for variables in template.analyze(include_partials=False).globals.values()
            for variable in variables
        ]
        # A root that is not a plain name is computed while rendering: it may be `contact`.
        self.constant = all(isinstance(root, str) and root != "contact" for root in roots)
        if not self.constant and all(
            type(node) in (ContentNode, OutputNode) for node in template.nodes
        ):
            self.autoescape = template.env.autoescape
            self.limit = template.env.output_stream_limit
            self.parts = [_part(node) for node in template.nodes]
            # What `BoundTemplate.render` puts in scope, later ones first: the template's
            # globals and matter, the variables, and `partial` (`render_with_context`).
            self.globals: dict[str, Any] = {
                **template.globals,
                **template.matter,
                **shared,
                "partial": False,
            }
            self.context = template.context_class(template, globals=self.globals)

    def _ordinary(self, contact: dict[str, Any]) -> str:
        assert self.source is not None
        return _render_source(
            self.source, {**self.shared, "contact": contact}, path=self.path, html=self.html
        )

    def _statements(self, contact: dict[str, Any]) -> str | None:
        assert self.parts is not None
        scope = self.globals
        scope["contact"] = contact
        return _render_parts(self.parts, scope, self.context, self.autoescape, self.limit)

    def render(self, contact: dict[str, Any]) -> str | None:
        if self.source is None:
            return None
        if self.constant:
            if self.once is None:
                try:
                    self.once = (self._ordinary(contact), None)
                except TemplateRenderFailed as error:
                    self.once = (None, error)
            rendered, failure = self.once
            if failure is not None:
                raise failure
            return rendered
        if self.parts is not None:
            out = self._statements(contact)
            if out is not None:
                return out
        return self._ordinary(contact)


class EmailRenderer:
    """An email version rendered for many contacts of one project (a campaign batch), with
    the content `render_email` gives for each (undefined variables are not collected)."""

    def __init__(self, version: TemplateVersion, *, project: Project) -> None:
        shared = template_context(project=project)
        self.members = [
            _Member(version.subject, shared, path="subject", html=False),
            _Member(version.html, shared, path="html", html=True),
            _Member(version.text, shared, path="text", html=False),
        ]

    def render(self, contact: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """Subject, html and text for `contact` (its `contact_variables`); raises
        TemplateRenderFailed for the first member that fails, as `render_email` does."""
        subject, html, text = self.members
        return subject.render(contact), html.render(contact), text.render(contact)


class _Flat:
    """One content member rendered with variables after variables (a batch of sends, each
    with its own contact, event and steps), with `_render_source`'s result: a member made
    only of text and output statements keeps one render context, whose variables are
    replaced per render, and evaluates its statements with it (as `_Member` does); any
    error, or an output past the sandbox's limit, and any other member, renders the
    ordinary way."""

    def __init__(self, source: str | None, *, path: str, html: bool) -> None:
        self.source, self.path, self.html = source, path, html
        self.parts: list[Any] | None = None
        if source is None:
            return
        try:
            template = _parsed(source, html)
        except (LiquidError, RecursionError):
            return  # every render reports the error
        if all(type(node) in (ContentNode, OutputNode) for node in template.nodes):
            self.autoescape = template.env.autoescape
            self.limit = template.env.output_stream_limit
            self.parts = [_part(node) for node in template.nodes]
            # What `BoundTemplate.render` puts in scope, later ones first: the template's
            # globals and matter, the variables, and `partial` (`render_with_context`).
            self.base: dict[str, Any] = {**template.globals, **template.matter}
            # Not empty: the context would take an empty mapping's place with its own.
            self.scope: dict[str, Any] = {"partial": False}
            self.context = template.context_class(template, globals=self.scope)

    def _statements(self, variables: Mapping[str, Any]) -> str | None:
        assert self.parts is not None
        scope = self.scope
        scope.clear()
        scope.update(self.base)
        scope.update(variables)
        scope["partial"] = False
        try:
            return _render_parts(self.parts, scope, self.context, self.autoescape, self.limit)
        finally:
            scope.clear()  # holds no sender's variables between renders

    def render(self, variables: Mapping[str, Any]) -> str | None:
        if self.source is None:
            return None
        if self.parts is not None:
            out = self._statements(variables)
            if out is not None:
                return out
        return _render_source(self.source, variables, path=self.path, html=self.html)


class EmailVersionRenderer:
    """`render_email` of one version for many sets of variables (a batch of sends of one
    template): the same content and undefined variables, each member's template looked
    at once rather than per send."""

    def __init__(self, version: TemplateVersion) -> None:
        self.members = (
            _Flat(version.subject, path="subject", html=False),
            _Flat(version.html, path="html", html=True),
            _Flat(version.text, path="text", html=False),
        )

    def render(self, variables: Mapping[str, Any]) -> RenderedEmail:
        subject, html, text = self.members
        with _recording() as seen:
            rendered = (subject.render(variables), html.render(variables), text.render(variables))
        return RenderedEmail(*rendered, undefined_variables=list(seen))
