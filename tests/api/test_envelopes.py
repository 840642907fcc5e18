"""Every answer is an envelope: success, lists, and each kind of failure (docs/API.md,
Foundation: envelope)."""

import socket
import time
import uuid

import pytest
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.management import call_command
from django.db import transaction
from django.http import Http404
from django.urls import path
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIClient

import config.urls
from config.api.serializers import StrictSerializer
from config.celery import app as celery_app
from tenancy.api.base import ProjectView
from tenancy.models import Membership

pytestmark = pytest.mark.django_db

LEAKY_MESSAGE = "SELECT secret_hash FROM tenancy_apikey -- /work/main/config/api/views.py"


class ItemSerializer(StrictSerializer):
    sku = serializers.CharField(max_length=4)
    quantity = serializers.IntegerField(min_value=1)


class PayloadSerializer(StrictSerializer):
    items = ItemSerializer(many=True)
    tags = serializers.ListField(child=serializers.IntegerField())


class OrderSerializer(StrictSerializer):
    payload = PayloadSerializer()


class ValidatingView(ProjectView):
    """Validates a nested body the way every write endpoint does."""

    def post(self, request: Request) -> Response:
        body = OrderSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(body.validated_data, status=201)


class FailingView(ProjectView):
    """Fails in the ways code below a view can fail."""

    def get(self, request: Request) -> Response:
        failure = request.query_params.get("failure")
        if failure == "http404":
            raise Http404("Project 42 in table tenancy_project")
        if failure == "django_validation":
            raise DjangoValidationError({"email": ["Enter a valid email address."]})
        if failure == "unique":
            member = Membership.objects.filter(team_id=self.project.team_id).first()
            with transaction.atomic():
                Membership.objects.create(team_id=member.team_id, user_id=member.user_id)
        raise RuntimeError(LEAKY_MESSAGE)


def crashes(request):
    raise RuntimeError(LEAKY_MESSAGE)


def raises_permission_denied(request):
    raise PermissionDenied("Row 7 of tenancy_apikey")


urlpatterns = [
    path("tests/validate", ValidatingView.as_view()),
    path("tests/denied", raises_permission_denied),
    path("tests/crash", crashes),
    path("tests/fail", FailingView.as_view()),
    *config.urls.urlpatterns,
]

# Django's own error pages, outside DRF; config.urls names the same views.
handler400 = "config.api.exceptions.bad_request_view"
handler403 = "config.api.exceptions.permission_denied_view"
handler404 = "config.api.exceptions.not_found_view"
handler500 = "config.api.exceptions.server_error_view"


def assert_error(response, status, code):
    body = response.json()
    assert response.status_code == status, body
    assert body == {
        "status": status,
        "error": {
            "code": code,
            "message": body["error"]["message"],
            "details": body["error"]["details"],
            "issues": body["error"]["issues"],
        },
    }
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert isinstance(body["error"]["details"], str)
    assert isinstance(body["error"]["issues"], list)
    return body["error"]


def issue_paths(error):
    return sorted(issue["path"] for issue in error["issues"])


# Success


def test_a_success_carries_its_http_status_and_data_only(api, world):
    response = api.get("/project", key=world.keys["project"])

    body = response.json()
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert set(body) == {"status", "data"}
    assert body["status"] == 200


@pytest.mark.urls(__name__)
def test_a_created_answer_carries_201_in_the_body_too(api, world):
    body = {"payload": {"items": [{"sku": "A1", "quantity": 2}], "tags": [1]}}

    response = api.post("/tests/validate", body, key=world.keys["project"])

    assert response.status_code == 201
    assert response.json()["status"] == 201


def test_a_list_adds_metadata(api, world):
    response = api.get("/projects", key=world.keys["team"])

    body = response.json()
    assert set(body) == {"status", "data", "metadata"}
    assert body["metadata"] == {
        "total": 2,
        "items": 2,
        "limit": 20,
        "after": None,
        "next": None,
        "has_more": False,
    }


# Paths and methods


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("with_key", [True, False], ids=["with-key", "without-key"])
def test_an_unknown_path_is_a_404_envelope_whatever_the_method(api, world, method, with_key):
    key = world.keys["project"] if with_key else None

    response = api.request(method, "/no/such/thing", {"a": 1}, key=key)

    assert_error(response, 404, "not_found")


def test_a_post_to_an_unknown_path_is_404_even_when_csrf_is_enforced(world):
    client = APIClient(enforce_csrf_checks=True)

    response = client.post("/no/such/thing", {"a": 1}, format="json")

    assert_error(response, 404, "not_found")


@pytest.mark.parametrize("path", ["/project/", "/projects/", "/health/", "/openapi.json/"])
def test_a_trailing_slash_is_404_not_a_redirect(api, world, path):
    response = api.get(path, key=world.keys["project"])

    assert_error(response, 404, "not_found")
    assert "Location" not in response


@pytest.mark.parametrize(
    ("key", "project"),
    [("project", None), ("sending", None), ("personal_owner", None), ("personal_viewer", "own")],
)
def test_a_wrong_method_is_405_once_the_key_is_known(api, world, key, project):
    project_id = world.project.id if project else None

    response = api.delete("/project", key=world.keys[key], project=project_id)

    assert_error(response, 405, "method_not_allowed")
    assert set(response["Allow"].replace(" ", "").split(",")) >= {"GET", "PATCH"}


def test_a_wrong_method_on_a_list_is_405(api, world):
    response = api.put("/projects", {}, key=world.keys["team"])

    assert_error(response, 405, "method_not_allowed")


def test_authentication_is_checked_before_the_method(api, world):
    response = api.delete("/project")

    assert_error(response, 401, "unauthenticated")


# Bodies


@pytest.mark.parametrize("raw", ['{"name": ', "{'name': 'x'}", "[1,]", "\x00"])
def test_a_body_that_is_not_json_is_invalid_json(api, world, raw):
    response = api.patch("/project", raw=raw, key=world.keys["project"])

    error = assert_error(response, 400, "invalid_json")
    assert error["issues"] == []


def test_a_body_of_another_media_type_is_415(api, world):
    response = api.request(
        "PATCH",
        "/project",
        key=world.keys["project"],
        data="name=x",
        content_type="text/plain",
    )

    assert_error(response, 415, "unsupported_media_type")


def test_validation_issues_point_at_the_member_with_a_dotted_path(api, world):
    body = {"policies": {"prepared_action_ttl_seconds": 0, "colour": "red"}, "name": ""}

    response = api.patch("/project", body, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert issue_paths(error) == ["name", "policies.colour", "policies.prepared_action_ttl_seconds"]
    unknown = next(i for i in error["issues"] if i["path"] == "policies.colour")
    assert unknown["code"] == "unknown_member"
    assert all(set(issue) == {"code", "path", "message"} for issue in error["issues"])


@pytest.mark.urls(__name__)
def test_validation_issues_reach_into_lists_of_objects(api, world):
    body = {
        "payload": {
            "items": [{"sku": "A1", "quantity": 1}, {"sku": "TOO-LONG", "quantity": 0}],
            "tags": [1, "two"],
            "extra": True,
        }
    }

    response = api.post("/tests/validate", body, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert issue_paths(error) == [
        "payload.extra",
        "payload.items.1.quantity",
        "payload.items.1.sku",
        "payload.tags.1",
    ]


@pytest.mark.parametrize("body", [[], "text", 5])
def test_a_body_that_is_not_an_object_is_a_validation_error_at_the_root(api, world, body):
    response = api.patch("/project", body, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert issue_paths(error) == [""]


def test_an_empty_body_is_a_validation_error(api, world):
    response = api.patch("/project", {}, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert issue_paths(error) == [""]


# Failures below the view


@pytest.mark.urls(__name__)
def test_an_unexpected_exception_is_a_500_that_reveals_nothing(api, world, caplog):
    response = api.get("/tests/fail", key=world.keys["project"])

    error = assert_error(response, 500, "internal_error")
    text = response.content.decode()
    for leak in ("SELECT", "tenancy_apikey", "Traceback", "RuntimeError", "/work/"):
        assert leak not in text
    assert error["details"] == ""
    assert any(LEAKY_MESSAGE in r.getMessage() or r.exc_info for r in caplog.records), (
        "the failure is logged for us"
    )


def test_a_failing_service_behind_a_real_endpoint_is_a_500(api, world, monkeypatch):
    def explode(**kwargs):
        raise KeyError("policies")

    monkeypatch.setattr("tenancy.api.views.project_update", explode)

    response = api.patch("/project", {"name": "x"}, key=world.keys["project"])

    assert_error(response, 500, "internal_error")


@pytest.mark.urls(__name__)
def test_djangos_own_404_becomes_the_not_found_envelope(api, world):
    response = api.get("/tests/fail", {"failure": "http404"}, key=world.keys["project"])

    error = assert_error(response, 404, "not_found")
    assert "tenancy_project" not in str(error)


@pytest.mark.urls(__name__)
def test_djangos_validation_error_becomes_a_validation_envelope(api, world):
    response = api.get("/tests/fail", {"failure": "django_validation"}, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert issue_paths(error) == ["email"]


@pytest.mark.urls(__name__)
def test_a_unique_violation_is_a_conflict(api, world):
    response = api.get("/tests/fail", {"failure": "unique"}, key=world.keys["project"])

    error = assert_error(response, 409, "conflict")
    assert "membership_one_per_team_user" not in str(error)


@pytest.mark.urls(__name__)
def test_a_request_django_refuses_before_any_view_is_a_400_envelope(api, db):
    response = api.get("/health", headers={"Host": "attacker.example"})

    assert_error(response, 400, "bad_request")


@pytest.mark.urls(__name__)
def test_djangos_permission_denied_outside_the_api_is_a_403_envelope(api, db):
    response = api.get("/tests/denied")

    error = assert_error(response, 403, "forbidden")
    assert "tenancy_apikey" not in str(error)


@pytest.mark.urls(__name__)
def test_an_error_escaping_a_plain_django_view_is_a_500_envelope(db):
    client = APIClient(raise_request_exception=False)

    response = client.get("/tests/crash")

    error = assert_error(response, 500, "internal_error")
    assert "Traceback" not in response.content.decode()
    assert error["details"] == ""


# Service endpoints


def test_health_answers_without_a_key(api, db):
    response = api.get("/health")

    assert response.status_code == 200
    assert response.json() == {"status": 200, "data": {"database": "ok", "broker": "ok"}}


def test_health_is_503_when_the_broker_is_unreachable(api, db, monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    closed = f"redis://127.0.0.1:{closed_port}/0"
    # Celery reads the environment before its configuration, so point both at the port.
    monkeypatch.setenv("CELERY_BROKER_URL", closed)
    monkeypatch.setitem(celery_app.conf, "broker_url", closed)

    started = time.monotonic()
    response = api.get("/health")

    assert time.monotonic() - started < 5, "a probe answers fast"
    error = assert_error(response, 503, "service_unavailable")
    assert error["details"] == "broker: unreachable"


def test_the_openapi_document_needs_no_key_and_carries_the_interface_version(api, db):
    response = api.get("/openapi.json")

    assert response.status_code == 200
    document = response.json()
    assert document["info"]["version"] == "0.3.0"
    assert document["openapi"].startswith("3.")
    assert document["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"


def test_the_openapi_document_shows_envelopes_not_bare_bodies(api, db):
    document = api.get("/openapi.json").json()

    project = document["paths"]["/project"]["get"]
    success = project["responses"]["200"]["content"]["application/json"]["schema"]
    assert success["required"] == ["status", "data"]
    listing = document["paths"]["/projects"]["get"]["responses"]["200"]
    assert "metadata" in listing["content"]["application/json"]["schema"]["properties"]
    for status in ("400", "401", "403", "404", "405", "500"):
        schema = project["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}
    assert project["security"] == [{"ApiKey": []}]
    assert "security" not in document["paths"]["/health"]["get"]


def test_the_interactive_reference_is_served_without_a_key(api, db):
    response = api.get("/docs")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"/openapi.json" in response.content
    # Swagger UI comes from our own static files, not a CDN: it works offline.
    assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/" in response.content
    assert b"cdn" not in response.content.lower()


def test_the_schema_generates_without_warnings(tmp_path):
    target = tmp_path / "openapi.json"

    call_command(
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--format",
        "openapi-json",
        "--file",
        str(target),
    )

    assert target.stat().st_size > 0


def test_an_unknown_uuid_in_a_known_family_is_not_a_server_error(api, world):
    response = api.get(f"/projects/{uuid.uuid4()}", key=world.keys["team"])

    assert_error(response, 404, "not_found")
