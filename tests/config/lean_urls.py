"""A URLconf for tests/config/test_lean_routes.py: lean views at routes their own pattern
reads, and at routes that patterns before them may share paths with (a regular
expression, a converter of its own, a `str` segment), which the lean path leaves to
Django's resolver."""

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import include, path, re_path, register_converter

from contacts.api.views import ContactDetailView
from tenancy.api.views import ProjectDetailView


class ShoutConverter:
    """Upper-case words, read lower-case."""

    regex = "[A-Z]+"

    def to_python(self, value: str) -> str:
        return value.lower()

    def to_url(self, value: str) -> str:
        return value.upper()


register_converter(ShoutConverter, "shout")


def plain(request: HttpRequest, **kwargs: Any) -> HttpResponse:
    return HttpResponse()


detail = ContactDetailView.as_view()
project = ProjectDetailView.as_view()

inner = [path("things/<uuid:thing_id>", detail, {"kind": "thing"}, name="thing")]

urlpatterns = [
    path("", include([path("deep/<uuid:deep_id>", detail)])),
    path("ns/", include((inner, "app"), namespace="ns"), {"outer": 1, "kind": "outer"}),
    # The view's extra kwargs win over what the route captured.
    path("own/<int:n>", detail, {"n": 5}, name="own"),
    path("pairs/<uuid:a>/<uuid:b>", detail),
    path("with/<int:n>/", include([path("<uuid:thing_id>", detail, name="under")])),
    path("contacts/", include([re_path(r"^(?P<contact_id>[0-9a-f-]{36})$", plain)])),
    path("contacts/<uuid:contact_id>", detail, name="contact-detail"),
    path("shouts/<shout:word>", plain),
    path("shouts/<uuid:thing_id>", detail),
    path("items/<str:slug>", plain),
    path("items/<uuid:item_id>", detail),
    path("items/<uuid:item_id>/more", detail),
    # The first of two views at one path is Django's answer.
    path("project", plain),
    path("project", project),
    path("later/<uuid:later_id>", detail),
    re_path(r"^[\s\S]*$", plain),
]
