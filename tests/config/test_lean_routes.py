"""The lean path finds the view, the arguments and the route name Django's resolver gives,
and so do the URLconf's readable routes (config/api/routes.py, which agent tools use), for
every path: the paths of every route in the URLconf with ids, other words and hostile text
in their parameters, and bent out of shape, compared with `resolve()`."""

import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from django.test import override_settings
from django.urls import Resolver404, ResolverMatch, URLResolver, get_resolver, resolve, set_urlconf
from django.urls.resolvers import RoutePattern

from config.api.lean import LeanFront, Match, Route
from config.api.routes import reader_of
from contacts.api.views import ContactDetailView

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
ID = "3f2a1b4c-1234-4abc-8def-0123456789ab"
# What a parameter of a route is filled with.
VALUES = (
    ID,
    ID.upper(),
    str(uuid.UUID(int=0)),
    ID.replace("-", ""),
    "{" + ID + "}",
    ID + "0",
    ID[:-1],
    "upsert",
    "42",
    "",
    "not-a-uuid",
    "a/b",
    "é",
    ID + "\n",
    "%2F",
    " ",
)


def django_answers(found: ResolverMatch | None) -> dict[str, Match | None]:
    """What the lean path must answer, by method: Django's resolver's view, arguments and
    route name, when the view serves the method leanly."""
    view = getattr(found.func, "view_class", None) if found is not None else None
    lean = getattr(view, "lean_methods", ())
    answers: dict[str, Match | None] = dict.fromkeys(METHODS)
    if found is not None:
        name = found.view_name if found.url_name else str(found.route)
        for method in lean:
            answers[method] = Match(Route(view=view, name=name), found.kwargs)
    return answers


def routes(patterns: Any, prefix: str = "") -> Iterator[str]:
    """Every `path()` route of the URLconf, from the root."""
    for entry in patterns:
        if not isinstance(entry.pattern, RoutePattern):
            continue
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, route)
        else:
            yield route


def filled(route: str, first: str, rest: str) -> str:
    """The route with its first parameter `first` and the others `rest`."""
    parts = route.split("<")
    out = [parts[0]]
    for at, part in enumerate(parts[1:]):
        out.append((first if at == 0 else rest) + part.split(">", 1)[1])
    return "/" + "".join(out)


def bent(path: str) -> Iterator[str]:
    yield path
    yield path + "/"
    yield path[:-1]
    yield path[1:]
    yield "/" + path
    yield path.replace("/", "//", 2)
    yield quote(path)
    yield path + "\n"
    yield path + "\x00"


def paths() -> Iterator[str]:
    seen: set[str] = set()
    for route in routes(get_resolver().url_patterns):
        for value in VALUES:
            for made in (filled(route, value, value), filled(route, ID, value)):
                for path in bent(made):
                    if path not in seen:
                        seen.add(path)
                        yield path
    yield from ("", "/", "//", "/contacts", "/contacts/", "/%63ontacts/" + ID)


def assert_as_django(front: LeanFront) -> tuple[int, int]:
    """Compares every path's lean route, and the view and arguments the URLconf's readable
    routes give it (config/api/routes.py, as agent tools use them), with Django's resolver's;
    how many paths were compared and how many a readable route read."""
    compared = read = 0
    resolver = get_resolver()
    for path in paths():
        try:
            found: ResolverMatch | None = resolve(path)
        except Resolver404:
            found = None
        answers = {method: front.match(method, path) for method in METHODS}
        assert answers == django_answers(found), path
        endpoint = reader_of(resolver, path)
        if endpoint is not None:
            assert found is not None, path
            assert endpoint.pattern is not None
            assert (endpoint.pattern.callback, endpoint.read(path)) == (
                found.func,
                found.kwargs,
            ), path
            read += 1
        compared += 1
    return compared, read


def test_every_path_of_the_urlconf_is_matched_as_django_resolves_it():
    front = LeanFront(lambda environ, start_response: [])
    compared, read = assert_as_django(front)
    assert compared > 10_000
    assert read > 1_000
    # The contact's route is read by its own pattern, with no path left to the resolver.
    table = front.routes()
    assert [route for _, route in table.read["GET"]] == [
        Route(view=ContactDetailView, name="contact-detail")
    ]
    assert table.resolved == {}


def test_a_contact_s_path_gives_the_converted_id_in_any_case():
    front = LeanFront(lambda environ, start_response: [])
    for value in (ID, ID.upper()):
        match = front.match("GET", f"/contacts/{value}")
        assert match is not None
        assert match.kwargs == {"contact_id": uuid.UUID(ID)}
    for path in (f"/contacts/{ID}/", f"/contacts/{ID}/subscriptions", "/contacts/upsert"):
        assert front.match("GET", path) is None


URLCONF = "tests.config.lean_urls"


def test_routes_that_earlier_patterns_may_share_paths_with_are_left_to_the_resolver(settings):
    settings.ROOT_URLCONF = URLCONF
    front = LeanFront(lambda environ, start_response: [])
    table = front.routes()
    assert [route.name for _, route in table.read["GET"]] == [
        "deep/<uuid:deep_id>",
        "ns:thing",
        "own",
        "pairs/<uuid:a>/<uuid:b>",
        "later/<uuid:later_id>",
    ]
    # Behind a converter, a regular expression, a converter of its own, a `str` segment.
    assert table.resolved == {"GET": ("/contacts/", "/items/", "/shouts/", "/with/")}
    # Django's answer at `/project` is the view before the lean one.
    assert table.fixed == {}
    compared, read = assert_as_django(front)
    assert compared > 1_000
    assert read > 50
    # Each route's extra kwargs, the view's winning over the include's and the route's.
    assert front.match("GET", f"/ns/things/{ID}") == Match(
        Route(ContactDetailView, "ns:thing"),
        {"outer": 1, "kind": "thing", "thing_id": uuid.UUID(ID)},
    )
    assert front.match("GET", "/own/7") == Match(Route(ContactDetailView, "own"), {"n": 5})
    # Resolved: the regular expression takes lower-case ids, the lean view the others.
    assert front.match("GET", f"/contacts/{ID}") is None
    assert front.match("GET", f"/contacts/{ID.upper()}") == Match(
        Route(ContactDetailView, "contact-detail"), {"contact_id": uuid.UUID(ID)}
    )
    assert front.match("GET", f"/with/3/{ID}") == Match(
        Route(ContactDetailView, "under"), {"n": 3, "thing_id": uuid.UUID(ID)}
    )


def test_the_routes_follow_the_urlconf_the_resolver_reads():
    front = LeanFront(lambda environ, start_response: [])
    real = front.routes()
    assert front.match("GET", f"/later/{ID}") is None
    with override_settings(ROOT_URLCONF=URLCONF):
        assert front.match("GET", f"/later/{ID}") is not None
        assert front.routes() is not real
    assert front.match("GET", f"/later/{ID}") is None
    # A URLconf set for this thread (as a request's `urlconf` is) is the one read.
    set_urlconf(URLCONF)
    try:
        assert front.match("GET", f"/later/{ID}") is not None
        elsewhere: list[Match | None] = []
        thread = threading.Thread(
            target=lambda: elsewhere.append(front.match("GET", f"/later/{ID}"))
        )
        thread.start()
        thread.join()
        assert elsewhere == [None]
    finally:
        set_urlconf(None)
    assert front.match("GET", f"/later/{ID}") is None


def test_invented_paths_leave_the_routes_as_they_were():
    front = LeanFront(lambda environ, start_response: [])
    table = front.routes()
    sizes = (len(table.fixed), len(table.read), len(table.resolved))
    for n in range(5_000):
        front.match("GET", f"/contacts/{uuid.uuid4()}/{n}")
        front.match("GET", f"/junk-{n}/{uuid.uuid4()}")
    assert front.routes() is table
    assert (len(table.fixed), len(table.read), len(table.resolved)) == sizes
