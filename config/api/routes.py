"""The URLconf's views in the order Django's resolver tries them, and which of them their own
pattern alone tells the paths of, with the arguments Django gives.

Django's resolver answers a path with the first view, in the order of the URLconf, whose
patterns all match it: the root's `/`, each `include`'s prefix in turn (the rest of the
path passed on), then the view's own pattern. The arguments are the includes' extra
kwargs, outermost first, then the ones the route captured (converted), then the view's
own extra kwargs, each later one winning (URLResolver.resolve, URLPattern.resolve).

An endpoint is `readable`, its paths told without that walk and with the same answer,
when both hold:

- Every `include` above it has a plain-text route (Django's `path()` pattern, no
  converter, untranslated): such a prefix matches exactly the paths that start with its
  text, so the view's patterns all match `path` exactly when `path` starts with `start`
  (`/` and the prefixes) and the view's own pattern (a `path()` one: keyword arguments
  only) matches the rest. That pattern object is the one Django calls, with the same
  converters and the same errors.
- No view before it can match any path it matches, so the resolver reaches it whenever it
  matches and picks it. Each earlier view is either plain text throughout (it matches one
  path, which this view's pattern refuses) or known to match only paths that begin with
  its `lead` (`/`, the plain prefixes and the text of its first `path()` route up to a
  converter), and that lead and this view's lead are not a start of one another, so no
  path begins with both. Django stops at the first prefix that does not match, so such a
  view runs none of its converters on this view's paths either.

Anything else (a regular expression, a translated route, a resolver or pattern class of
its own) reads as a lead no longer than what is known before it, and a view behind it, or
after it sharing its start, is left to Django's resolver.
"""

import functools
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver
from django.urls.resolvers import RoutePattern

from config.libinternals import route_untranslated


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One view's place in the URLconf (`pattern` None for an entry of a class of its own,
    which this module does not read)."""

    pattern: URLPattern | None
    # As the request metrics name a route: the namespaced URL name, else the route as
    # Django joins it (`contacts/<uuid:contact_id>`).
    name: str
    # What every path it matches starts with (`/contacts/`).
    lead: str
    # Where its own pattern starts reading the path (`/` and the includes' routes), when
    # every include above it is plain text; None otherwise.
    start: str | None
    # The includes' extra kwargs, merged outermost first.
    defaults: dict[str, Any]

    @property
    def path(self) -> str | None:
        """The one path it matches, when its route is plain text throughout."""
        if self.start is None or self.pattern is None or not _plain(self.pattern.pattern):
            return None
        return self.start + str(self.pattern.pattern)

    def read(self, path: str) -> dict[str, Any] | None:
        """The view's arguments for `path` as Django gives them when its patterns match it,
        else None."""
        start = self.start
        if start is None or self.pattern is None or not path.startswith(start):
            return None
        found = self.pattern.pattern.match(path[len(start) :])
        if found is None:
            return None
        return {**self.defaults, **found[2], **self.pattern.default_args}


def _route(pattern: Any) -> bool:
    """Whether a pattern is `path()`'s with an untranslated route: its regular expression
    starts with the route's text up to the first converter, and captures no positional
    arguments."""
    return type(pattern) is RoutePattern and route_untranslated(pattern)


def _plain(pattern: Any) -> bool:
    """Whether a pattern matches exactly the paths that start with its route (an
    endpoint's: the route itself)."""
    return _route(pattern) and not pattern.converters


def endpoints(resolver: URLResolver) -> list[Endpoint]:
    """Every view of the URLconf, in the order the resolver tries them."""
    found: list[Endpoint] = []

    def walk(
        entries: Any,
        start: str | None,
        lead: str,
        route: str,
        namespace: str,
        defaults: dict[str, Any],
    ) -> None:
        for entry in entries:
            own = entry.pattern
            text = str(own) if _route(own) else ""
            head = lead + text.split("<", 1)[0] if start is not None else lead
            # As URLResolver._join_route joins routes: a part after a non-empty one loses
            # a leading `^`.
            joined = route + (str(own).removeprefix("^") if route else str(own))
            if type(entry) is URLResolver:
                plain = start is not None and _plain(own)
                walk(
                    entry.url_patterns,
                    start + text if plain and start is not None else None,
                    head,
                    joined,
                    f"{namespace}{entry.namespace}:" if entry.namespace else namespace,
                    {**defaults, **entry.default_kwargs},
                )
            elif type(entry) is URLPattern:
                name = f"{namespace}{entry.name}" if entry.name else joined
                found.append(Endpoint(entry, name, head, start, defaults))
            else:
                found.append(Endpoint(None, "", lead, None, {}))

    walk(resolver.url_patterns, "/", "/", "", "", dict(resolver.default_kwargs))
    return found


def readable(endpoint: Endpoint, earlier: list[Endpoint]) -> bool:
    """Whether `endpoint.read` gives Django's answer for every path it matches: the view is
    the one the resolver picks for each (`earlier`: every endpoint before it)."""
    if endpoint.start is None or endpoint.pattern is None or not _route(endpoint.pattern.pattern):
        return False
    for other in earlier:
        path = other.path
        if path is not None:
            try:
                if endpoint.read(path) is not None:
                    return False
            except Exception:
                # A converter that fails on it: left to Django, which raises the same.
                return False
        elif other.lead.startswith(endpoint.lead) or endpoint.lead.startswith(other.lead):
            return False
    return True


@functools.lru_cache(maxsize=8)
def readers(resolver: URLResolver) -> tuple[Endpoint, ...]:
    """The URLconf's `readable` endpoints, in its order (kept for the few URLconfs a
    process resolves with: the root one, and those tests set)."""
    listed = endpoints(resolver)
    return tuple(endpoint for at, endpoint in enumerate(listed) if readable(endpoint, listed[:at]))


def reader_of(resolver: URLResolver, path: str) -> Endpoint | None:
    """The readable endpoint that reads `path` (at most one does), which is where Django's
    resolver sends it; None when no readable endpoint does."""
    for endpoint in readers(resolver):
        if endpoint.read(path) is not None:
            return endpoint
    return None
