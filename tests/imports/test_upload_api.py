"""`POST /imports` from a CSV file (multipart) or JSON rows, `GET /imports` and
`GET /imports/{id}` (docs/API.md, Imports): detection, limits, bad input, keys."""

import codecs

import pytest
from django.test import override_settings

from imports.models import Import, ImportRow, RowError, RowStatus
from tests.contacts.factories import ContactFactory
from tests.imports.conftest import csv_text, error_of, issue_paths

pytestmark = pytest.mark.django_db

MAPPING = {"Email": "email", "First name": "fields.first_name"}


def stored_rows(import_id):
    return list(
        ImportRow.objects.filter(import_record_id=import_id)
        .order_by("row_number")
        .values_list("row_number", "status", "error_code", "email", "fields")
    )


# Uploading


def test_a_csv_upload_stores_the_mapped_rows_and_answers_the_import(imports, world):
    content = csv_text("Email,First name,Ignored", " Ada@Example.com ,Ada,x", "bob@example.com,,y")

    response = imports.upload_csv(content, MAPPING)

    assert response.status_code == 201
    data = response.json()["data"]
    assert data == {
        "id": data["id"],
        "status": "uploaded",
        "source": "csv",
        "filename": "contacts.csv",
        "encoding": "utf-8",
        "delimiter": ",",
        "columns": ["Email", "First name", "Ignored"],
        "mapping": MAPPING,
        "automation_effects": "suppress",
        "total_rows": 2,
        "valid_rows": 2,
        "invalid_rows": 0,
        "changes": None,
        "prepared_action_id": None,
        "previewed_at": None,
        "commit_rows": 0,
        "committed_rows": 0,
        "progress": None,
        "last_error": None,
        "created_at": data["created_at"],
        "updated_at": data["updated_at"],
        "committed_at": None,
    }
    assert stored_rows(data["id"]) == [
        (1, "valid", None, "ada@example.com", {"first_name": "Ada"}),
        (2, "valid", None, "bob@example.com", {}),
    ]


def test_json_rows_keep_their_json_values(imports):
    rows = [
        {"mail": "ada@example.com", "plan": {"tier": "pro"}, "age": 36, "id": 7},
        {"mail": "bob@example.com", "plan": None, "age": 41.5, "id": "b-2"},
    ]
    mapping = {"mail": "email", "plan": "fields.plan", "age": "fields.age", "id": "external_id"}

    response = imports.upload_rows(rows, mapping, automation_effects="trigger")

    assert response.status_code == 201
    data = response.json()["data"]
    assert (data["source"], data["automation_effects"], data["total_rows"]) == (
        "json",
        "trigger",
        2,
    )
    assert data["encoding"] is None
    stored = ImportRow.objects.filter(import_record_id=data["id"]).order_by("row_number")
    assert [(row.external_id, row.fields) for row in stored] == [
        ("7", {"plan": {"tier": "pro"}, "age": 36}),
        ("b-2", {"age": 41.5}),
    ]


@pytest.mark.parametrize(
    ("encoding", "raw"),
    [
        ("utf-8-sig", codecs.BOM_UTF8 + "Email,First name\r\nzoe@example.com,Zoë\r\n".encode()),
        ("cp1252", "Email,First name\r\nzoe@example.com,Zoë €\r\n".encode("cp1252")),
        ("utf-16", "Email,First name\r\nzoe@example.com,Zoë\r\n".encode("utf-16")),
    ],
)
def test_the_encoding_is_detected(imports, encoding, raw):
    data = imports.uploaded(raw, MAPPING)

    assert data["encoding"] == encoding
    assert data["columns"] == ["Email", "First name"]
    assert ImportRow.objects.get(import_record_id=data["id"]).fields["first_name"].startswith("Zo")


def test_bytes_that_are_no_known_encoding_are_read_as_latin_1(imports):
    raw = b"Email,First name\r\nzoe@example.com,Zo\x81\r\n"

    data = imports.uploaded(raw, MAPPING)

    assert data["encoding"] == "latin-1"
    assert ImportRow.objects.get(import_record_id=data["id"]).fields == {"first_name": "Zo\x81"}


def test_a_given_encoding_is_used(imports):
    raw = "Email,First name\r\nzoe@example.com,Zoë\r\n".encode("latin-1")

    data = imports.uploaded(raw, MAPPING, encoding="latin-1")

    assert data["encoding"] == "iso8859-1"
    assert ImportRow.objects.get(import_record_id=data["id"]).fields == {"first_name": "Zoë"}


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_the_delimiter_is_detected(imports, delimiter):
    content = csv_text(f"Email{delimiter}First name", f"ada@example.com{delimiter}Ada, the first")

    data = imports.uploaded(content, MAPPING)

    assert data["delimiter"] == delimiter
    assert ImportRow.objects.get(import_record_id=data["id"]).fields == {
        "first_name": "Ada, the first"
    }


def test_a_given_delimiter_is_used(imports):
    content = csv_text("Email;First name", "ada@example.com;Ada")

    data = imports.uploaded(content, MAPPING, delimiter=";")

    assert data["delimiter"] == ";"
    assert data["valid_rows"] == 1


def test_quoted_cells_may_hold_delimiters_and_newlines(imports):
    content = csv_text("Email,First name", '"ada@example.com","Ada,\nthe first"')

    data = imports.uploaded(content, MAPPING)

    row = ImportRow.objects.get(import_record_id=data["id"])
    assert row.fields == {"first_name": "Ada,\nthe first"}


def test_blank_lines_are_not_rows(imports):
    content = csv_text("Email,First name", "", "ada@example.com,Ada", ",", "bob@example.com,Bob")

    data = imports.uploaded(content, MAPPING)

    assert data["total_rows"] == 2
    assert [row[0] for row in stored_rows(data["id"])] == [1, 2]


# Bad rows: counted, never aborting the import


def test_bad_rows_are_stored_as_invalid_with_their_code_and_nothing_else(imports):
    content = csv_text(
        "Email,First name,External",
        "ada@example.com,Ada,a-1",
        ",No email,",
        "not-an-email,Nobody,",
        "ADA@example.com,Ada again,",
        "carl@example.com,Carl,a-1",
        "dora@example.com,Dora,d-1,surplus",
        "erin@example.com,Erin,",
    )
    mapping = {**MAPPING, "External": "external_id"}

    data = imports.uploaded(content, mapping)

    assert (data["total_rows"], data["valid_rows"], data["invalid_rows"]) == (7, 2, 5)
    assert [(row[0], row[1], row[2]) for row in stored_rows(data["id"])] == [
        (1, "valid", None),
        (2, "invalid", RowError.MISSING_EMAIL),
        (3, "invalid", RowError.INVALID_EMAIL),
        (4, "invalid", RowError.DUPLICATE_ROW),
        (5, "invalid", RowError.DUPLICATE_ROW),
        (6, "invalid", RowError.INVALID_VALUE),
        (7, "valid", None),
    ]
    invalid = ImportRow.objects.filter(import_record_id=data["id"], status=RowStatus.INVALID)
    assert [(row.email, row.external_id, row.fields, row.audiences) for row in invalid] == [
        (None, None, {}, [])
    ] * 5


def test_an_external_id_alone_may_name_the_contacts(imports):
    content = csv_text("id,name", "u-1,Ada", ",Nobody", "u-1,Again")

    data = imports.uploaded(content, {"id": "external_id", "name": "fields.name"})

    assert [(row[0], row[2]) for row in stored_rows(data["id"])] == [
        (1, None),
        (2, RowError.INVALID_VALUE),
        (3, RowError.DUPLICATE_ROW),
    ]


def test_json_values_that_cannot_be_stored_make_their_row_invalid(imports):
    rows = [
        {"mail": "ada@example.com", "note": "fine"},
        {"mail": "bob@example.com", "note": "nul \u0000 inside"},
        {"mail": 42, "note": "x"},
        {"mail": "carl@example.com", "list": ["VIP", 3]},
    ]
    mapping = {"mail": "email", "note": "fields.note", "list": "audience"}

    data = imports.upload_rows(rows, mapping).json()["data"]

    assert [(row[0], row[2]) for row in stored_rows(data["id"])] == [
        (1, None),
        (2, RowError.INVALID_VALUE),
        (3, RowError.INVALID_EMAIL),
        (4, RowError.INVALID_VALUE),
    ]


@override_settings(IMPORT_MAX_NAMES=2)
def test_rows_naming_more_audiences_than_an_import_may_are_invalid(imports):
    content = csv_text(
        "Email,List", "a@example.com,One", "b@example.com,two", "c@example.com,Three"
    )

    data = imports.uploaded(content, {"Email": "email", "List": "audience"})

    assert [row[2] for row in stored_rows(data["id"])] == [None, None, RowError.INVALID_VALUE]
    assert Import.objects.get(id=data["id"]).audience_names == ["One", "two"]


# Bad files and mappings: a 4xx, nothing stored


def assert_nothing_stored():
    assert not Import.objects.exists()
    assert not ImportRow.objects.exists()


def test_a_binary_file_is_not_csv(imports):
    content = b"PK\x03\x04\x14\x00\x06\x00" + bytes(range(256)) * 4

    response = imports.upload_csv(content, MAPPING, name="contacts.xlsx")

    assert error_of(response) == (400, "validation_error")
    assert response.json()["error"]["issues"][0] == {
        "code": "not_csv",
        "path": "file",
        "message": "The file is not a CSV file (it holds binary data).",
    }
    assert_nothing_stored()


def test_an_unclosed_quote_that_runs_on_is_not_csv(imports):
    content = csv_text("Email,First name", 'ada@example.com,"Ada') + b"x" * (1024 * 1024 + 10)

    response = imports.upload_csv(content, MAPPING)

    assert error_of(response) == (400, "validation_error")
    assert response.json()["error"]["issues"][0]["code"] == "not_csv"
    assert_nothing_stored()


def test_text_that_is_not_in_the_given_encoding_is_400(imports):
    raw = "Email,First name\r\nzoe@example.com,Zoë\r\n".encode("latin-1")

    response = imports.upload_csv(raw, MAPPING, encoding="utf-8")

    assert error_of(response) == (400, "validation_error")
    assert response.json()["error"]["issues"][0]["code"] == "invalid_encoding"
    assert_nothing_stored()


@pytest.mark.parametrize("encoding", ["no-such-codec", "bz2_codec", "rot13"])
def test_an_encoding_that_is_no_text_codec_is_400_at_encoding(imports, encoding):
    response = imports.upload_csv(csv_text("Email", "a@example.com"), MAPPING, encoding=encoding)

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["encoding"]


def test_an_empty_file_has_no_header(imports):
    response = imports.upload_csv(b"", MAPPING)

    assert error_of(response) == (400, "validation_error")
    assert response.json()["error"]["issues"][0]["code"] == "no_header"
    assert_nothing_stored()


def test_a_file_without_a_header_names_none_of_the_mapped_columns(imports):
    content = csv_text("ada@example.com,Ada", "bob@example.com,Bob")

    response = imports.upload_csv(content, MAPPING)

    assert error_of(response) == (400, "validation_error")
    assert sorted(issue_paths(response)) == ["mapping.Email", "mapping.First name"]
    assert {issue["code"] for issue in response.json()["error"]["issues"]} == {"unknown_column"}
    assert_nothing_stored()


def test_an_unknown_mapped_column_is_400_at_its_mapping(imports):
    content = csv_text("Email,First name", "ada@example.com,Ada")

    response = imports.upload_csv(content, {**MAPPING, "Phone": "fields.phone"})

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["mapping.Phone"]
    assert_nothing_stored()


def test_a_json_mapping_of_a_column_no_row_has_is_400(imports):
    response = imports.upload_rows([{"mail": "ada@example.com"}], {"email": "email"})

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["mapping.email"]
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("mapping", "paths", "code"),
    [
        ({"First name": "fields.first_name"}, ["mapping"], "identity_required"),
        ({"Email": "email", "First name": "email"}, ["mapping.First name"], "duplicate"),
        ({"Email": "email", "First name": "nickname"}, ["mapping.First name"], "invalid_choice"),
        ({"Email": "email", "First name": "fields."}, ["mapping.First name"], "invalid"),
        ({"Email": "email", "First name": 3}, ["mapping.First name"], "invalid_type"),
    ],
)
def test_a_mapping_that_does_not_make_sense_is_400(imports, mapping, paths, code):
    content = csv_text("Email,First name", "ada@example.com,Ada")

    response = imports.upload_csv(content, mapping)

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == paths
    assert response.json()["error"]["issues"][0]["code"] == code
    assert_nothing_stored()


@pytest.mark.parametrize("mapping", ["not json", "[1, 2]", "{}"])
def test_a_mapping_that_is_not_a_json_object_is_400(imports, mapping):
    response = imports.upload_csv(csv_text("Email", "ada@example.com"), mapping)

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["mapping"]


def test_an_upload_without_a_file_is_400_at_file(imports, world):
    response = imports.api.client.post(
        "/imports",
        {"mapping": '{"Email": "email"}'},
        format="multipart",
        headers=imports.headers(),
    )

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["file"]


def test_json_rows_must_be_objects(imports):
    response = imports.upload_rows([{"mail": "ada@example.com"}, "bob"], {"mail": "email"})

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["rows.1"]
    assert_nothing_stored()


def test_unknown_members_of_either_body_are_400(imports):
    json_response = imports.upload_rows([{"m": "a@example.com"}], {"m": "email"}, extra=1)
    form_response = imports.upload_csv(csv_text("Email", "a@example.com"), MAPPING, extra="1")

    assert issue_paths(json_response) == ["extra"]
    assert issue_paths(form_response) == ["extra"]
    assert_nothing_stored()


def test_a_file_over_the_size_policy_is_413(imports):
    content = csv_text("Email,First name", *(f"p{n}@example.com,Person {n}" for n in range(100)))

    with override_settings(IMPORT_MAX_FILE_BYTES=1000):
        response = imports.upload_csv(content, MAPPING)

    assert error_of(response) == (413, "request_too_large")
    assert response.json()["error"]["details"] == "A CSV file may be up to 1000 bytes."
    assert_nothing_stored()


def test_a_body_over_the_size_policy_is_refused_before_it_is_read(imports):
    content = csv_text("Email", *(f"person-{n:08d}@example.com" for n in range(40_000)))
    assert len(content) > 1024 * 1024 + 1000

    with override_settings(IMPORT_MAX_FILE_BYTES=1000):
        response = imports.upload_csv(content, {"Email": "email"})

    assert error_of(response) == (413, "request_too_large")
    assert response.json()["error"]["details"].startswith(
        "A CSV file may be up to 1000 bytes; this body has "
    )
    assert_nothing_stored()


def test_a_file_over_the_row_limit_is_413_and_stores_nothing(imports):
    content = csv_text("Email", *(f"p{n}@example.com" for n in range(11)))

    with override_settings(IMPORT_MAX_ROWS=10):
        response = imports.upload_csv(content, {"Email": "email"})

    assert error_of(response) == (413, "request_too_large")
    assert_nothing_stored()


def test_json_rows_over_their_limit_are_400(imports):
    with override_settings(IMPORT_MAX_JSON_ROWS=2):
        response = imports.upload_rows(
            [{"m": f"p{n}@example.com"} for n in range(3)], {"m": "email"}
        )

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["rows"]


def test_a_million_json_rows_are_refused_before_any_row_is_checked(imports):
    # None of them is an object: had a row been checked, its issue would be listed.
    response = imports.upload_rows([0] * 1_000_000, {"m": "email"})

    assert error_of(response) == (400, "validation_error")
    assert response.json()["error"]["issues"] == [
        {
            "code": "max_length",
            "path": "rows",
            "message": "At most 10000 rows; upload larger imports as CSV.",
        }
    ]
    assert_nothing_stored()


def test_bad_json_rows_are_listed_up_to_a_hundred_and_the_rest_counted(imports):
    rows = [{"m": "a@example.com"}] + [n for n in range(9_999)]

    response = imports.upload_rows(rows, {"m": "email"}, unknown=True)

    assert error_of(response) == (400, "validation_error")
    issues = response.json()["error"]["issues"]
    assert len(issues) == 102
    assert [issue["path"] for issue in issues[:100]] == [f"rows.{n}" for n in range(1, 101)]
    assert {issue["code"] for issue in issues[:100]} == {"not_an_object"}
    assert issues[100] == {
        "code": "more_issues",
        "path": "rows",
        "message": "9899 more rows are not valid; they are not listed.",
    }
    assert issues[101]["path"] == "unknown"
    assert_nothing_stored()


def test_a_json_body_over_its_limit_is_413(imports):
    rows = [{"m": f"p{n}@example.com", "pad": "x" * 1000} for n in range(20)]

    with override_settings(IMPORT_MAX_JSON_BYTES=10_000):
        response = imports.upload_rows(rows, {"m": "email"})

    assert error_of(response) == (413, "request_too_large")


def test_a_form_encoded_body_is_415(imports):
    response = imports.api.client.post(
        "/imports",
        "mapping=x",
        content_type="application/x-www-form-urlencoded",
        headers=imports.headers(),
    )

    assert error_of(response) == (415, "unsupported_media_type")


# Keys, scopes and projects


@pytest.mark.parametrize("persona", ["project", "team", "personal_member", "personal_admin"])
def test_keys_with_the_imports_scope_may_upload(imports, world, persona):
    response = imports.upload_csv(
        csv_text("Email", "a@example.com"), {"Email": "email"}, key=world.keys[persona]
    )

    assert response.status_code == 201


@pytest.mark.parametrize("persona", ["read_only", "sending", "personal_viewer"])
def test_keys_without_the_imports_scope_may_not_upload(imports, world, persona):
    response = imports.upload_csv(
        csv_text("Email", "a@example.com"), {"Email": "email"}, key=world.keys[persona]
    )

    assert error_of(response) == (403, "forbidden")
    assert_nothing_stored()


def test_a_personal_key_must_name_the_project(imports, world):
    response = imports.upload_csv(
        csv_text("Email", "a@example.com"), {"Email": "email"}, project=None
    )

    assert error_of(response) == (400, "project_required")


def test_imports_are_listed_oldest_first_and_read_in_their_project_only(imports, world, api):
    first = imports.uploaded(csv_text("Email", "a@example.com"), {"Email": "email"})
    second = imports.uploaded(csv_text("Email", "b@example.com"), {"Email": "email"})

    listed = api.get("/imports", key=world.keys["read_only"])
    other = api.get(f"/imports/{first['id']}", key=world.keys["other_project"])

    assert listed.status_code == 200
    assert [item["id"] for item in listed.json()["data"]] == [first["id"], second["id"]]
    assert listed.json()["metadata"]["total"] == 2
    assert imports.get(second["id"])["id"] == second["id"]
    assert error_of(other) == (404, "not_found")


def test_uploading_changes_no_contact(imports, world):
    ContactFactory(project=world.project, email="ada@example.com", fields={"first_name": "A"})

    imports.uploaded(csv_text("Email,First name", "ada@example.com,Ada"), MAPPING)

    assert world.project.contacts.get().fields == {"first_name": "A"}
