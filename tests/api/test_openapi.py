"""The OpenAPI document says what the API does: paging, JSON-only bodies, strict bodies and
the rules across their members, checked against the views and serializers themselves."""

import copy

import pytest
from django.urls import path
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator
from openapi_spec_validator import OpenAPIV30SpecValidator, validate

from tenancy.preparedactions.api.views import ExecuteActionView, PrepareActionView
from tests.conftest import Api

pytestmark = pytest.mark.django_db

JSON = "application/json"
MULTIPART = "multipart/form-data"


@pytest.fixture(scope="module")
def served_document():
    """/openapi.json as served, generated once for the module's tests (a second or so)."""
    response = Api().get("/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture
def document(served_document):
    return copy.deepcopy(served_document)


def operations(document):
    for route, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), route, operation


def resolve(document, schema):
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def request_schema(document, route, method):
    operation = document["paths"][route][method.lower()]
    return resolve(document, operation["requestBody"]["content"][JSON]["schema"])


def list_operations():
    """(path, view class) of every GET the code marks as a cursor list."""
    for route, _, method, callback in EndpointEnumerator().get_api_endpoints():
        if method == "GET" and getattr(callback.cls, "paginated", False):
            yield route, callback.cls


def test_the_document_is_valid_openapi_3_0(document):
    validate(document, cls=OpenAPIV30SpecValidator)


def test_every_list_documents_its_paging_parameters_with_bounds(document):
    lists = list(list_operations())
    assert len(lists) >= 8  # projects, contacts, audiences (+ properties, members), topics ...

    for route, view in lists:
        parameters = {p["name"]: p for p in document["paths"][route]["get"]["parameters"]}
        assert parameters["limit"]["in"] == "query", view
        assert parameters["limit"]["schema"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
        }, view
        after = parameters["after"]["schema"]
        assert after["type"] == "string", view
        assert after["minLength"] == 1, view
        assert after["maxLength"] >= 256, view
        response = document["paths"][route]["get"]["responses"]["200"]
        assert "metadata" in response["content"][JSON]["schema"]["required"], view


def test_operations_that_are_not_lists_take_no_paging_parameters(document):
    lists = {route for route, _ in list_operations()}

    for method, route, operation in operations(document):
        names = {p["name"] for p in operation.get("parameters", [])}
        if method != "GET" or route not in lists:
            assert not names & {"limit", "after"}, f"{method} {route}"


def test_the_event_catalog_documents_its_filters(document):
    parameters = {p["name"]: p for p in document["paths"]["/event-types"]["get"]["parameters"]}

    assert parameters["source"]["schema"]["enum"] == ["customer", "system"]
    assert parameters["search"]["schema"]["type"] == "string"


# The one endpoint that takes a form: a CSV file upload.
MULTIPART_BODIES = {("POST", "/imports")}


def test_every_request_body_is_json_only(document):
    bodies = [(m, r, op) for m, r, op in operations(document) if m in ("POST", "PUT", "PATCH")]
    assert len(bodies) >= 13

    for method, route, operation in bodies:
        media = [JSON, MULTIPART] if (method, route) in MULTIPART_BODIES else [JSON]
        assert list(operation["requestBody"]["content"]) == media, f"{method} {route}"
        assert "415" in operation["responses"], f"{method} {route}"


def test_a_csv_import_is_documented_as_a_strict_form_with_a_file(document):
    content = document["paths"]["/imports"]["post"]["requestBody"]["content"]
    form = resolve(document, content[MULTIPART]["schema"])

    assert form["properties"]["file"] == {"type": "string", "format": "binary"}
    assert form["properties"]["mapping"]["type"] == "string"
    assert sorted(form["required"]) == ["file", "mapping"]
    assert form["additionalProperties"] is False


def test_every_object_in_a_request_body_refuses_unknown_members(document):
    """Every write body is a StrictSerializer (or the events' own strict parser); objects
    with declared members say `additionalProperties: false`, free-form ones (`fields`,
    `payload`, `properties`) say they take any member."""
    seen = set()

    def walk(schema, where):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            if name in seen:
                return
            seen.add(name)
        schema = resolve(document, schema)
        for branch in schema.get("allOf", []) + schema.get("anyOf", []):
            walk(branch, where)
        if schema.get("type") == "array":
            walk(schema["items"], where)
        if schema.get("type") != "object":
            return
        if schema.get("properties"):
            assert schema.get("additionalProperties") is False, where
            for name, member in schema["properties"].items():
                walk(member, f"{where}.{name}")
        else:
            assert "additionalProperties" in schema, f"{where}: free-form or closed, say which"

    for method, route, operation in operations(document):
        # Segment's bodies (/v1/...) take every member its clients send, by design.
        if "requestBody" in operation and not route.startswith("/v1/"):
            walk(operation["requestBody"]["content"][JSON]["schema"], f"{method} {route}")
    assert {"PoliciesInputRequest", "SubscriptionChangeRequest"} <= seen


@pytest.mark.parametrize(
    ("route", "method"),
    [
        ("/contacts/{contact_id}", "PATCH"),
        ("/project", "PATCH"),
        ("/audiences/{audience_id}", "PATCH"),
        ("/topics/{topic_id}", "PATCH"),
    ],
)
def test_patch_bodies_need_at_least_one_member(document, route, method):
    assert request_schema(document, route, method)["minProperties"] == 1
    assert document["paths"][route][method.lower()]["requestBody"]["required"] is True


@pytest.mark.parametrize(
    ("route", "members"),
    [
        ("/contacts/lookup", ["email", "external_id"]),
        ("/audiences/{audience_id}/members", ["contact_id", "email"]),
    ],
)
def test_bodies_that_need_exactly_one_identity_say_one_of(document, route, members):
    schema = request_schema(document, route, "POST")

    assert schema["oneOf"] == [{"required": [member]} for member in members]


def test_an_event_needs_at_least_one_identity_with_a_value(document):
    schema = request_schema(document, "/events", "POST")

    assert [branch["required"] for branch in schema["anyOf"]] == [
        ["contact_id"],
        ["external_id"],
        ["email"],
    ]
    # `null` counts as absent, so a branch needs the member as a string.
    for branch in schema["anyOf"]:
        assert "nullable" not in branch["properties"][branch["required"][0]]
    assert schema["required"] == ["event"]
    assert schema["properties"]["event"]["pattern"].startswith("^[a-z0-9]")
    assert schema["properties"]["payload"]["nullable"] is True


def test_a_batch_holds_one_to_five_hundred_events(document):
    events = request_schema(document, "/events/batch", "POST")["properties"]["events"]

    assert (events["minItems"], events["maxItems"]) == (1, 500)


def test_subscription_changes_hold_one_to_a_hundred_topics(document):
    body = request_schema(document, "/contacts/{contact_id}/subscriptions", "PUT")
    topics = body["properties"]["topics"]

    assert (topics["minItems"], topics["maxItems"]) == (1, 100)


@pytest.mark.parametrize(
    ("route", "method"),
    [
        ("/contacts/upsert", "POST"),
        ("/contacts/lookup", "POST"),
        ("/contacts/{contact_id}", "PATCH"),
        ("/audiences/{audience_id}/members", "POST"),
        ("/events", "POST"),
    ],
)
def test_email_members_say_they_are_email_addresses(document, route, method):
    assert request_schema(document, route, method)["properties"]["email"]["format"] == "email"


def test_a_lookup_that_finds_nothing_is_documented_as_null_data(document):
    response = document["paths"]["/contacts/lookup"]["post"]["responses"]["200"]
    data = response["content"][JSON]["schema"]["properties"]["data"]

    assert data == {"allOf": [{"$ref": "#/components/schemas/Contact"}], "nullable": True}


def test_project_operations_document_the_project_header(document):
    for method, route, operation in operations(document):
        names = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "header"}
        # The definition schema is the same for every project.
        if route in ("/health", "/projects", "/automations/definition-schema"):
            assert "X-Service-Project-Id" not in names, route
        else:
            header = names["X-Service-Project-Id"]
            assert header["schema"] == {"type": "string", "format": "uuid"}, f"{method} {route}"
            assert header.get("required", False) is False


urlpatterns = [
    path("things/<uuid:id>/actions/<str:action>/prepare", PrepareActionView.as_view(family="t")),
    path("things/<uuid:id>/actions/<str:action>/execute", ExecuteActionView.as_view(family="t")),
]


def test_prepare_takes_an_empty_object_and_execute_a_strict_one():
    generated = SchemaGenerator(patterns=urlpatterns).get_schema(request=None, public=True)
    prepare = generated["paths"]["/things/{id}/actions/{action}/prepare"]["post"]
    execute = generated["paths"]["/things/{id}/actions/{action}/execute"]["post"]

    assert resolve(generated, prepare["requestBody"]["content"][JSON]["schema"]) == {
        "type": "object",
        "additionalProperties": False,
        "maxProperties": 0,
    }
    assert "required" not in prepare["requestBody"]
    body = resolve(generated, execute["requestBody"]["content"][JSON]["schema"])
    assert body["additionalProperties"] is False
    assert sorted(body["required"]) == ["idempotency_key", "prepared_action_id"]


def test_a_form_encoded_body_is_415_in_the_envelope(api, world):
    response = api.request(
        "POST",
        "/contacts/upsert",
        key=world.keys["project"],
        data="email=ada%40example.com",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 415
    body = response.json()
    assert body["status"] == 415
    assert body["error"]["code"] == "unsupported_media_type"
    assert body["error"]["issues"] == []


def test_a_multipart_body_is_415_in_the_envelope(api, world):
    response = api.client.patch(
        "/project",
        {"name": "Renamed"},
        format="multipart",
        headers={"Authorization": f"Bearer {world.keys['project']}"},
    )

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    world.project.refresh_from_db()
    assert world.project.name == "Main"


# The API does what the document says where the fuzzer found them apart.


@pytest.mark.parametrize(
    "value",
    ["", "{00000000-0000-4000-8000-000000000000}", "00000000000040008000000000000000"],
)
def test_a_project_header_that_is_not_a_plain_uuid_is_400(api, world, value):
    response = api.get(
        "/project", key=world.keys["project"], headers={"X-Service-Project-Id": value}
    )

    assert response.status_code == 400
    issues = response.json()["error"]["issues"]
    assert [issue["path"] for issue in issues] == ["X-Service-Project-Id"]


def test_a_project_header_in_upper_case_names_the_project(api, world):
    header = {"X-Service-Project-Id": str(world.project.id).upper()}

    response = api.get("/project", key=world.keys["team"], headers=header)

    assert response.status_code == 200
    assert response.json()["data"]["id"] == str(world.project.id)


def test_an_event_name_must_match_the_documented_pattern_to_its_end(api, world):
    body = {"event": "order.completed\n", "email": "ada@example.com"}

    response = api.post("/events", body, key=world.keys["project"])

    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["code"] == "invalid_event_name"
