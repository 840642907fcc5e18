"""Bad input answers 4xx in the envelope, never 500: deep or large bodies, text PostgreSQL
cannot store, and parse errors that tell nothing about the parser."""

import json

import pytest
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

import config.urls
from config.api.parsers import MAX_DEPTH, nesting_exceeds
from contacts.models import Contact
from events.api.views import BATCH_MAX_BODY_BYTES
from events.models import Event
from tenancy.api.base import ProjectView
from tests.contacts.audiences.factories import AudienceFactory

pytestmark = pytest.mark.django_db

UPLOAD_LIMIT = 2_621_440


class EchoesItsBody(ProjectView):
    """Reads the parsed body, then the raw bytes, as a body hash or signature check would."""

    def post(self, request: Request) -> Response:
        return Response({"data": request.data, "bytes": len(request.body)})


urlpatterns = [path("tests/echo", EchoesItsBody.as_view()), *config.urls.urlpatterns]


def assert_error(response, status, code):
    body = response.json()
    assert response.status_code == status, body
    assert response["Content-Type"] == "application/json"
    assert body["status"] == status
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["details"], str)
    return body["error"]


def nested(depth, inner="1"):
    return "[" * depth + inner + "]" * depth


# Nesting


@pytest.mark.parametrize("path", ["/contacts/upsert", "/events", "/events/batch"])
def test_json_nested_thousands_deep_is_invalid_json(api, world, path):
    response = api.post(path, raw=nested(5000), key=world.keys["project"])

    error = assert_error(response, 400, "invalid_json")
    assert str(MAX_DEPTH) in error["details"]


def test_objects_nested_past_the_bound_inside_fields_are_invalid_json(api, world):
    deep = '{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH
    raw = f'{{"email": "a@example.com", "fields": {deep}}}'

    response = api.post("/contacts/upsert", raw=raw, key=world.keys["project"])

    assert_error(response, 400, "invalid_json")
    assert not Contact.objects.exists()


def test_nesting_up_to_the_bound_is_accepted(api, world):
    # The body is one level, `payload` one more: the value inside may use the rest.
    value = json.loads(nested(MAX_DEPTH - 2))
    body = {"event": "deep.enough", "email": "a@example.com", "payload": {"v": value}}

    response = api.post("/events", body, key=world.keys["project"])

    assert response.status_code == 202, response.json()


def test_brackets_inside_strings_do_not_count_as_nesting(api, world):
    fields = {"note": "[" * 5000 + '{"\\"' + "{" * 100}

    response = api.post(
        "/contacts/upsert", {"email": "a@example.com", "fields": fields}, key=world.keys["project"]
    )

    assert response.status_code == 201, response.json()
    assert Contact.objects.get().fields == fields


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        (nested(MAX_DEPTH), False),
        (nested(MAX_DEPTH + 1), True),
        ('["' + "[" * 500 + '"]', False),
        ('["\\"' + "[" * 500 + '"]', False),
        ('"unterminated ' + "[" * 500, False),
        ("[" * 100, True),
    ],
)
def test_the_nesting_scan_skips_strings_and_escapes(text, deeper):
    assert nesting_exceeds(text) is deeper


# Parse errors


@pytest.mark.parametrize(
    ("raw", "details"),
    [
        ('{"email": ', "Line 1, column 11."),
        ('{\n  "email": "a@example.com",\n}', "Line 3, column 1."),
        ('{"n": NaN}', "`NaN` is not a JSON number."),
        ('{"n": -Infinity}', "`-Infinity` is not a JSON number."),
    ],
)
def test_invalid_json_says_where_without_the_parsers_internals(api, world, raw, details):
    response = api.post("/contacts/upsert", raw=raw, key=world.keys["project"])

    error = assert_error(response, 400, "invalid_json")
    assert error["details"] == details
    assert error["issues"] == []


def test_a_body_that_is_not_utf8_is_invalid_json(api, world):
    response = api.post("/contacts/upsert", raw=b'{"email": "\xff"}', key=world.keys["project"])

    error = assert_error(response, 400, "invalid_json")
    for internal in ("codec", "byte 0x", "position", "Error"):
        assert internal not in error["details"]


def test_a_charset_that_is_not_text_is_invalid_json(api, world):
    response = api.request(
        "POST",
        "/contacts/upsert",
        key=world.keys["project"],
        data=b"{}",
        content_type="application/json; charset=bz2_codec",
    )

    assert_error(response, 400, "invalid_json")


def test_a_broken_multipart_body_is_refused_as_an_unsupported_type(api, world):
    response = api.request(
        "PATCH",
        "/project",
        key=world.keys["project"],
        data=b"--x\r\nnot a part",
        content_type="multipart/form-data",
    )

    error = assert_error(response, 415, "unsupported_media_type")
    assert error["details"] == ""


@pytest.mark.urls(__name__)
def test_the_raw_body_is_still_readable_after_parsing(api, world):
    raw = '{"a": [1, 2]}'

    response = api.post("/tests/echo", raw=raw, key=world.keys["project"])

    assert response.json()["data"] == {"data": {"a": [1, 2]}, "bytes": len(raw)}


# Body size


def test_a_body_over_the_upload_limit_is_413_in_the_envelope(api, world):
    body = {"email": "a@example.com", "fields": {"blob": "x" * UPLOAD_LIMIT}}

    response = api.post("/contacts/upsert", body, key=world.keys["project"])

    error = assert_error(response, 413, "request_too_large")
    assert str(UPLOAD_LIMIT) in error["details"]
    assert not Contact.objects.exists()


def test_a_form_body_over_the_upload_limit_is_refused_unread(api, world):
    response = api.request(
        "PATCH",
        "/project",
        key=world.keys["project"],
        data="name=" + "x" * UPLOAD_LIMIT,
        content_type="application/x-www-form-urlencoded",
    )

    assert_error(response, 415, "unsupported_media_type")


def test_the_size_is_checked_before_the_key_is_trusted_with_a_parse(api, world):
    response = api.patch(
        "/project", raw=" " * (UPLOAD_LIMIT + 1) + "{}", key=world.keys["read_only"]
    )

    # A key that may not write gets its 403 first: the body is never read.
    assert_error(response, 403, "forbidden")


def test_a_full_batch_of_large_payloads_fits_the_batch_limit(api, world):
    world.project.event_payload_limit_bytes = 65536
    world.project.save(update_fields=["event_payload_limit_bytes"])
    payload = {"blob": "x" * 65_000}
    events = [
        {"event": "big.one", "email": f"u{i}@example.com", "payload": payload} for i in range(60)
    ]
    raw = json.dumps({"events": events})
    assert len(raw) > UPLOAD_LIMIT

    response = api.post("/events/batch", raw=raw, key=world.keys["project"])

    assert response.status_code == 202, response.content[:300]
    assert response.json()["data"]["accepted"] == 60
    assert Event.objects.count() == 60


def test_a_batch_over_its_own_limit_is_413(api, world):
    raw = '{"events": []}' + " " * BATCH_MAX_BODY_BYTES

    response = api.post("/events/batch", raw=raw, key=world.keys["project"])

    error = assert_error(response, 413, "request_too_large")
    assert str(BATCH_MAX_BODY_BYTES) in error["details"]


# Text PostgreSQL cannot store


@pytest.mark.parametrize(
    ("raw_fields", "path"),
    [
        ('{"nickname": "Ada\\u0000"}', "fields.nickname"),
        ('{"nickname": "\\ud800"}', "fields.nickname"),
        ('{"pets": [{"name": "ok"}, {"name": "x\\u0000"}]}', "fields.pets.1.name"),
        ('{"bad\\u0000key": 1}', "fields.bad\x00key"),
    ],
)
def test_text_postgresql_cannot_store_in_fields_is_a_400_at_its_path(api, world, raw_fields, path):
    raw = f'{{"email": "a@example.com", "fields": {raw_fields}}}'

    response = api.post("/contacts/upsert", raw=raw, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert [issue["path"] for issue in error["issues"]] == [path]
    assert error["issues"][0]["code"] == "invalid_characters"
    assert not Contact.objects.exists()


def test_a_bad_value_in_fields_of_a_patch_is_a_400(api, world):
    created = api.post("/contacts/upsert", {"email": "a@example.com"}, key=world.keys["project"])
    contact_id = created.json()["data"]["id"]

    response = api.patch(
        f"/contacts/{contact_id}",
        raw='{"fields": {"nickname": "x\\u0000"}}',
        key=world.keys["project"],
    )

    error = assert_error(response, 400, "validation_error")
    assert [issue["path"] for issue in error["issues"]] == ["fields.nickname"]


def test_a_bad_value_in_member_properties_is_a_400_at_its_path(api, world):
    audience = AudienceFactory(project=world.project)
    api.post("/contacts/upsert", {"email": "a@example.com"}, key=world.keys["project"])

    response = api.post(
        f"/audiences/{audience.id}/members",
        raw='{"email": "a@example.com", "properties": {"plan": "x\\u0000"}}',
        key=world.keys["project"],
    )

    error = assert_error(response, 400, "validation_error")
    assert [issue["path"] for issue in error["issues"]] == ["properties.plan"]


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/contacts/upsert", '{"email": "a\\u0000@example.com"}'),
        ("/contacts/upsert", '{"email": "a@example.com", "external_id": "x\\u0000"}'),
        ("/contacts/upsert", '{"email": "a@example.com", "external_id": "\\udfff"}'),
        ("/contacts/lookup", '{"external_id": "x\\u0000"}'),
        ("/audiences", '{"name": "VIP\\u0000"}'),
        ("/topics", '{"name": "News\\ud800"}'),
    ],
)
def test_text_postgresql_cannot_store_in_a_text_column_is_a_400(api, world, path, raw):
    response = api.post(path, raw=raw, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert error["issues"][0]["code"] == "invalid_characters"


def test_a_nul_in_the_project_name_is_a_400(api, world):
    response = api.patch("/project", raw='{"name": "Main\\u0000"}', key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert [issue["path"] for issue in error["issues"]] == ["name"]


def test_a_lone_surrogate_quoted_back_in_a_message_still_renders(api, world):
    response = api.patch(
        "/project",
        raw='{"policies": {"email_normalization": "\\ud800"}}',
        key=world.keys["project"],
    )

    error = assert_error(response, 400, "validation_error")
    assert [issue["path"] for issue in error["issues"]] == ["policies.email_normalization"]


def test_a_lone_surrogate_in_an_unknown_member_name_still_renders(api, world):
    response = api.post(
        "/contacts/upsert",
        raw='{"email": "a@example.com", "\\ud800": 1}',
        key=world.keys["project"],
    )

    error = assert_error(response, 400, "validation_error")
    assert [issue["code"] for issue in error["issues"]] == ["unknown_member"]
