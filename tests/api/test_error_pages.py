"""Every error from every path is the JSON envelope, in every settings module (DEBUG on
too), and Django's debug page never shows connection URLs."""

import sys

import pytest
from django.conf import settings
from django.test import RequestFactory, override_settings
from django.urls import path
from django.views.debug import (
    ExceptionReporter,
    SafeExceptionReporterFilter,
    get_exception_reporter_filter,
)
from rest_framework.test import APIClient

import config.urls
from tests.api.test_envelopes import assert_error

pytestmark = pytest.mark.django_db

SECRET_URLS = {
    "database": "postgres://app:s3cret-db-pass@db.internal:5432/sendrealm",
    "broker": "redis://:s3cret-broker-pass@broker.internal:6379/1",
    "cache": "redis://:s3cret-cache-pass@cache.internal:6379/0",
    "dsn": "https://s3cret-dsn@errors.example/1",
}


def crashes(request):
    raise RuntimeError("boom in a plain view")


urlpatterns = [
    path("tests/crash", crashes),
    *config.urls.urlpatterns,
]
handler400 = config.urls.handler400
handler403 = config.urls.handler403
handler404 = config.urls.handler404
handler500 = config.urls.handler500


@pytest.fixture
def debug_client():
    """Django's client with DEBUG on, answering failures instead of raising them."""
    with override_settings(DEBUG=True):
        yield APIClient(raise_request_exception=False)


def assert_no_debug_page(response):
    text = response.content.decode()
    for leak in ("Traceback", "urlpatterns", "URLconf", "DATABASES", "redis://", "postgres://"):
        assert leak not in text


# The reference: /docs and /openapi.json


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/docs"),
        ("PUT", "/docs"),
        ("DELETE", "/docs"),
        ("POST", "/openapi.json"),
        ("DELETE", "/openapi.json"),
        ("PATCH", "/openapi.json"),
    ],
)
def test_a_wrong_method_on_the_reference_is_a_405_envelope(api, method, path):
    response = api.request(method, path, {"a": 1})

    assert response["Content-Type"] == "application/json"
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


@pytest.mark.parametrize("path", ["/docs", "/openapi.json", "/health"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("accept", ["application/json", "text/html", "text/csv", "*/*"])
def test_a_wrong_method_is_405_whatever_accept_asks_for(api, path, method, accept):
    # The method is checked before the media type is negotiated, as on the API's paths.
    response = api.request(method, path, {"a": 1}, HTTP_ACCEPT=accept)

    assert response["Content-Type"] == "application/json"
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]


@pytest.mark.parametrize("path", ["/docs", "/openapi.json"])
def test_options_on_the_reference_answers_the_success_envelope(api, path):
    response = api.request("OPTIONS", path)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["status"] == 200


@pytest.mark.parametrize(
    ("path", "media_type"), [("/docs", "text/html"), ("/openapi.json", "application/vnd.oai")]
)
def test_head_on_the_reference_answers_like_get(api, path, media_type):
    response = api.request("HEAD", path)

    assert response.status_code == 200
    assert response["Content-Type"].startswith(media_type)


def test_the_reference_refuses_an_accept_it_cannot_serve_in_the_envelope(api):
    response = api.get("/openapi.json", HTTP_ACCEPT="text/csv")

    assert response["Content-Type"] == "application/json"
    assert_error(response, 406, "not_acceptable")


# Paths


def test_a_path_with_a_newline_is_a_404_envelope(api):
    response = api.get("/contacts%0A/x")

    assert_error(response, 404, "not_found")


# DEBUG on: Django's technical pages never reach a client


@pytest.mark.urls(__name__)
def test_with_debug_on_a_path_with_a_newline_is_a_404_envelope(debug_client):
    response = debug_client.get("/no%0Asuch/path")

    assert_error(response, 404, "not_found")
    assert_no_debug_page(response)


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("method", ["get", "post", "options"])
def test_with_debug_on_a_bad_host_is_a_400_envelope(debug_client, method):
    response = getattr(debug_client, method)("/health", headers={"Host": "attacker.example"})

    assert_error(response, 400, "bad_request")
    assert_no_debug_page(response)


@pytest.mark.urls(__name__)
def test_with_debug_on_an_unexpected_exception_is_a_500_envelope(debug_client):
    response = debug_client.get("/tests/crash")

    error = assert_error(response, 500, "internal_error")
    assert error["details"] == ""
    assert "boom" not in response.content.decode()
    assert_no_debug_page(response)


@pytest.mark.urls(__name__)
def test_with_debug_on_a_form_over_the_upload_limit_is_a_413_envelope(debug_client):
    response = debug_client.post(
        "/admin/login/",
        "username=" + "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        content_type="application/x-www-form-urlencoded",
    )

    assert_error(response, 413, "request_too_large")


def test_an_html_error_of_the_admin_becomes_the_envelope(db):
    client = APIClient(enforce_csrf_checks=True)

    response = client.post("/admin/login/", {"username": "x"}, format="multipart")

    # CSRF's own 403 page is HTML; the envelope replaces it.
    assert_error(response, 403, "forbidden")


def debug_page(request):
    """Django's technical 500 page for an error raised while handling `request`."""
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        return ExceptionReporter(request, *sys.exc_info()).get_traceback_html()


def test_the_debug_page_masks_connection_urls():
    # Environment variables reach the page as request.META under a development server.
    request = RequestFactory().get(
        "/x", DATABASE_URL=SECRET_URLS["database"], CACHE_URL=SECRET_URLS["cache"]
    )
    cache = {**settings.CACHES["default"], "LOCATION": SECRET_URLS["cache"]}
    with override_settings(
        CELERY_BROKER_URL=SECRET_URLS["broker"],
        CACHES={"default": cache},
        SENTRY_DSN=SECRET_URLS["dsn"],
    ):
        html = debug_page(request)
        safe = get_exception_reporter_filter(request).get_safe_settings()

    assert "CELERY_BROKER_URL" in html, "the setting is listed, its value masked"
    for secret in SECRET_URLS.values():
        assert secret not in html
    assert safe["DATABASES"] == SafeExceptionReporterFilter.cleansed_substitute
