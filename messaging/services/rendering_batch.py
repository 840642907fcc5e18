"""One template version rendered many times, with the result of rendering it alone each
time (rendering.py) but less work per render: for the contacts of a campaign batch
(`EmailRenderer`) and for a batch of sends of one template (`EmailVersionRenderer`)."""

from collections.abc import Mapping
from typing import Any, cast

from liquid import BoundTemplate
from liquid.builtin.content import ContentNode
from liquid.builtin.expressions import FilteredExpression, Path
from liquid.builtin.output import OutputNode
from liquid.exceptions import LiquidError
from liquid.stringify import to_liquid_string
from markupsafe import escape

from messaging.errors import TemplateRenderFailed
from messaging.models.templates import TemplateVersion
from messaging.services.rendering import (
    _MISSING,
    PREFERENCES_URL,
    RenderedEmail,
    _parsed,
    _recording,
    _render_source,
    template_context,
)
from messaging.services.tokens import preferences_url
from tenancy.models import Project

# The variables that differ from contact to contact of a campaign: `contact` (its
# `contact_variables`) and the link to its preference page made from its id.
_PER_CONTACT = frozenset({"contact", PREFERENCES_URL})

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


class _Statements:
    """What `_Member` and `_Flat` share: a content member's template parsed (`template`,
    None when it has none or it does not parse: every render then reports the error) and,
    once `flatten` finds it made only of text and output statements (no tags, so nothing a
    render could change in its context), those statements (`parts`, else None) with one
    render context to evaluate them with."""

    def __init__(self, source: str | None, *, path: str, html: bool) -> None:
        self.source, self.path, self.html = source, path, html
        self.parts: list[Any] | None = None
        self.template: BoundTemplate | None = None
        if source is None:
            return
        try:
            self.template = _parsed(source, html)
        except (LiquidError, RecursionError):
            return  # every render reports the error

    def flatten(self, template: BoundTemplate, scope: dict[str, Any]) -> None:
        """Keeps the statements of a template made only of text and output statements,
        and a render context whose globals are `scope`, to evaluate them with."""
        if all(type(node) in (ContentNode, OutputNode) for node in template.nodes):
            self.autoescape = template.env.autoescape
            self.limit = template.env.output_stream_limit
            self.parts = [_part(node) for node in template.nodes]
            self.context = template.context_class(template, globals=scope)

    def evaluate(self, scope: dict[str, Any]) -> str | None:
        """The statements rendered with `scope` (`_render_parts`)."""
        assert self.parts is not None
        return _render_parts(self.parts, scope, self.context, self.autoescape, self.limit)


class _Member(_Statements):
    """One content member of a version rendered for contact after contact (a campaign's
    batch), with the same result as `_render_source` with the whole context each time, but
    doing less per contact:

    - a member that never reads `contact` or `preferences_url` (liquid's static analysis
      of its variables) is rendered once, for the first contact, and that result (or
      failure) serves them all;
    - a member made only of text and output statements (`{{ ... }}`, no tags, so nothing
      a render could change in its context) keeps one render context and evaluates the
      statements with it, swapping the `contact` variable (and `preferences_url`): no
      context, buffer and scope per render. Any error, or an output past the sandbox's
      limit, is rendered again the ordinary way, which reports it exactly as a lone
      render would;
    - anything else renders the ordinary way."""

    def __init__(self, source: str | None, shared: dict[str, Any], *, path: str, html: bool):
        super().__init__(source, path=path, html=html)
        self.shared = shared
        self.constant = False
        self.links = True
        self.once: tuple[str | None, TemplateRenderFailed | None] | None = None
        template = self.template
        if template is None:
            return
        roots = [
            variable.segments[0]
            for variables in template.analyze(include_partials=False).globals.values()
            for variable in variables
        ]
        # A root that is not a plain name is computed while rendering: it may be `contact`
        # or `preferences_url`.
        self.constant = all(isinstance(root, str) and root not in _PER_CONTACT for root in roots)
        # The preference page's link costs a signature: made only for members that read it.
        self.links = any(not isinstance(root, str) or root == PREFERENCES_URL for root in roots)
        if not self.constant:
            # What `BoundTemplate.render` puts in scope, later ones first: the template's
            # globals and matter, the variables, and `partial` (`render_with_context`).
            self.globals: dict[str, Any] = {
                **template.globals,
                **template.matter,
                **shared,
                "partial": False,
            }
            self.flatten(template, self.globals)

    def _ordinary(self, contact: dict[str, Any]) -> str:
        assert self.source is not None
        variables = {**self.shared, "contact": contact}
        if self.links:
            variables[PREFERENCES_URL] = preferences_url(contact["id"])
        return _render_source(self.source, variables, path=self.path, html=self.html)

    def _statements(self, contact: dict[str, Any]) -> str | None:
        scope = self.globals
        scope["contact"] = contact
        if self.links:
            scope[PREFERENCES_URL] = preferences_url(contact["id"])
        return self.evaluate(scope)

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


class _Flat(_Statements):
    """One content member rendered with variables after variables (a batch of sends, each
    with its own contact, event and steps), with `_render_source`'s result: a member made
    only of text and output statements keeps one render context, whose variables are
    replaced per render, and evaluates its statements with it (as `_Member` does); any
    error, or an output past the sandbox's limit, and any other member, renders the
    ordinary way."""

    def __init__(self, source: str | None, *, path: str, html: bool) -> None:
        super().__init__(source, path=path, html=html)
        template = self.template
        if template is None:
            return
        # What `BoundTemplate.render` puts in scope, later ones first: the template's
        # globals and matter, the variables, and `partial` (`render_with_context`).
        self.base: dict[str, Any] = {**template.globals, **template.matter}
        # Not empty: the context would take an empty mapping's place with its own.
        self.scope: dict[str, Any] = {"partial": False}
        self.flatten(template, self.scope)

    def _statements(self, variables: Mapping[str, Any]) -> str | None:
        scope = self.scope
        scope.clear()
        scope.update(self.base)
        scope.update(variables)
        scope["partial"] = False
        try:
            return self.evaluate(scope)
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
