"""The suppression list over HTTP: `GET|POST /suppressions`, `GET|DELETE /suppressions/{email}`."""

import pytest

from messaging.models import Suppression
from tenancy.models import EmailNormalization
from tests.messaging.factories_suppressions import SuppressionFactory

pytestmark = pytest.mark.django_db


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == status
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert isinstance(body["error"]["details"], str)
    return body["error"]


# --- add --------------------------------------------------------------------------------


def test_adding_an_address_answers_201_with_the_entry(api, world):
    response = api.post(
        "/suppressions", {"email": "ada@example.com", "reason": "bounce"}, key=world.keys["project"]
    )

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == 201
    assert set(body["data"]) == {"email", "reason", "created_at"}
    assert body["data"]["email"] == "ada@example.com"
    assert body["data"]["reason"] == "bounce"
    assert body["data"]["created_at"].endswith("Z")


def test_adding_an_address_again_answers_200_with_the_existing_entry(api, world):
    first = api.post(
        "/suppressions", {"email": "ada@example.com", "reason": "bounce"}, key=world.keys["project"]
    )
    again = api.post(
        "/suppressions",
        {"email": "ada@example.com", "reason": "complaint"},
        key=world.keys["project"],
    )

    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["data"] == first.json()["data"]
    assert Suppression.objects.get().reason == "bounce"


def test_an_address_is_stored_in_the_projects_normal_form(api, world):
    first = api.post(
        "/suppressions",
        {"email": "  Ada@Example.COM ", "reason": "manual"},
        key=world.keys["project"],
    )
    again = api.post(
        "/suppressions", {"email": "ada@example.com", "reason": "manual"}, key=world.keys["project"]
    )

    assert first.status_code == 201
    assert first.json()["data"]["email"] == "ada@example.com"
    assert again.status_code == 200
    assert Suppression.objects.count() == 1


def test_the_gmail_policy_folds_dots_and_tags_into_one_entry(api, world):
    world.project.email_normalization = EmailNormalization.GMAIL
    world.project.save()

    first = api.post(
        "/suppressions", {"email": "J.Doe+news@googlemail.com"}, key=world.keys["project"]
    )
    again = api.post("/suppressions", {"email": "jdoe@gmail.com"}, key=world.keys["project"])

    assert first.json()["data"]["email"] == "jdoe@gmail.com"
    assert again.status_code == 200


def test_the_reason_defaults_to_manual(api, world):
    response = api.post("/suppressions", {"email": "ada@example.com"}, key=world.keys["project"])

    assert response.status_code == 201
    assert response.json()["data"]["reason"] == "manual"


@pytest.mark.parametrize("reason", ["bounce", "complaint", "unsubscribe", "manual"])
def test_each_reason_of_the_contract_is_accepted(api, world, reason):
    response = api.post(
        "/suppressions", {"email": "ada@example.com", "reason": reason}, key=world.keys["project"]
    )

    assert response.status_code == 201
    assert response.json()["data"]["reason"] == reason


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [
        ({"email": "ada@example.com", "reason": "spam"}, "reason", "invalid_choice"),
        ({"email": "ada@example.com", "reason": None}, "reason", "null"),
        ({"email": "not-an-email", "reason": "manual"}, "email", "invalid_email"),
        ({"email": "", "reason": "manual"}, "email", "blank"),
        ({"email": ["ada@example.com"]}, "email", "invalid"),
        ({"reason": "manual"}, "email", "required"),
        ({"email": "ada@example.com", "source": "x"}, "source", "unknown_member"),
    ],
)
def test_a_bad_body_is_a_400_that_stores_nothing(api, world, body, path, code):
    error = assert_error(
        api.post("/suppressions", body, key=world.keys["project"]), 400, "validation_error"
    )

    assert {"path": path, "code": code} in [
        {"path": issue["path"], "code": issue["code"]} for issue in error["issues"]
    ]
    assert Suppression.objects.count() == 0


def test_a_body_that_is_not_json_is_invalid_json(api, world):
    response = api.post("/suppressions", raw="{email", key=world.keys["project"])

    assert_error(response, 400, "invalid_json")
    assert Suppression.objects.count() == 0


# --- list and read ----------------------------------------------------------------------


def test_the_list_pages_through_the_projects_entries_oldest_first(api, world, clock):
    for index in range(3):
        clock.advance(seconds=1)
        SuppressionFactory(project=world.project, email=f"a{index}@example.com")
    SuppressionFactory(project=world.other_project, email="elsewhere@example.com")

    first = api.get("/suppressions", {"limit": 2}, key=world.keys["project"])
    second = api.get(
        "/suppressions",
        {"limit": 2, "after": first.json()["metadata"]["next"]},
        key=world.keys["project"],
    )

    assert first.status_code == 200
    assert [item["email"] for item in first.json()["data"]] == ["a0@example.com", "a1@example.com"]
    assert first.json()["metadata"]["total"] == 3
    assert first.json()["metadata"]["has_more"] is True
    assert [item["email"] for item in second.json()["data"]] == ["a2@example.com"]
    assert second.json()["metadata"]["next"] is None


def test_a_page_of_the_list_costs_two_queries_whatever_its_size(
    api, world, django_assert_num_queries
):
    for index in range(5):
        SuppressionFactory(project=world.project, email=f"a{index}@example.com")
    api.get("/suppressions", key=world.keys["project"])  # caches the key and project

    with django_assert_num_queries(2):
        response = api.get("/suppressions", key=world.keys["project"])

    assert len(response.json()["data"]) == 5


def test_a_tampered_cursor_is_a_400(api, world):
    response = api.get("/suppressions", {"after": "nonsense"}, key=world.keys["project"])

    error = assert_error(response, 400, "validation_error")
    assert error["issues"][0]["path"] == "after"


def test_one_entry_is_read_by_its_address_in_any_spelling(api, world):
    SuppressionFactory(project=world.project, email="ada@example.com", reason="complaint")

    response = api.get("/suppressions/ADA%40Example.com", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["email"] == "ada@example.com"
    assert response.json()["data"]["reason"] == "complaint"


def test_reading_an_address_that_is_not_suppressed_is_a_404(api, world):
    assert_error(
        api.get("/suppressions/ada%40example.com", key=world.keys["project"]), 404, "not_found"
    )


# --- remove -----------------------------------------------------------------------------


def test_deleting_an_encoded_address_answers_200_with_the_removed_entry(api, world):
    SuppressionFactory(project=world.project, email="ada+tag@example.com", reason="bounce")

    response = api.delete("/suppressions/Ada%2Btag%40Example.com", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["email"] == "ada+tag@example.com"
    assert response.json()["data"]["reason"] == "bounce"
    assert Suppression.objects.count() == 0


def test_an_address_can_be_deleted_unencoded_too(api, world):
    SuppressionFactory(project=world.project, email="ada@example.com")

    response = api.delete("/suppressions/ada@example.com", key=world.keys["project"])

    assert response.status_code == 200
    assert Suppression.objects.count() == 0


def test_an_address_with_a_slash_in_its_local_part_is_addressable(api, world):
    SuppressionFactory(project=world.project, email="a/b@example.com")

    response = api.delete("/suppressions/a%2Fb%40example.com", key=world.keys["project"])

    assert response.status_code == 200
    assert response.json()["data"]["email"] == "a/b@example.com"


@pytest.mark.parametrize(
    "path",
    [
        "/suppressions/nobody%40example.com",
        "/suppressions/not-an-address",
        "/suppressions/not%20valid%40example.com",
    ],
)
def test_deleting_what_is_not_on_the_list_is_a_404(api, world, path):
    SuppressionFactory(project=world.project, email="ada@example.com")

    assert_error(api.delete(path, key=world.keys["project"]), 404, "not_found")
    assert Suppression.objects.count() == 1


def test_deleting_twice_is_a_404_the_second_time(api, world):
    SuppressionFactory(project=world.project, email="ada@example.com")

    first = api.delete("/suppressions/ada%40example.com", key=world.keys["project"])
    assert first.status_code == 200
    assert_error(
        api.delete("/suppressions/ada%40example.com", key=world.keys["project"]), 404, "not_found"
    )


def test_a_trailing_slash_is_a_404(api, world):
    SuppressionFactory(project=world.project, email="ada@example.com")

    for path in ("/suppressions/", "/suppressions/ada%40example.com/"):
        assert_error(api.get(path, key=world.keys["project"]), 404, "not_found")
    assert Suppression.objects.count() == 1


def test_a_wrong_method_is_a_405(api, world):
    assert_error(
        api.patch("/suppressions", {}, key=world.keys["project"]), 405, "method_not_allowed"
    )
    assert_error(
        api.post("/suppressions/ada%40example.com", {}, key=world.keys["project"]),
        405,
        "method_not_allowed",
    )


# --- projects and keys ------------------------------------------------------------------


def test_another_projects_entries_are_invisible(api, world):
    SuppressionFactory(project=world.other_project, email="ada@example.com")

    listing = api.get("/suppressions", key=world.keys["project"])
    read = api.get("/suppressions/ada%40example.com", key=world.keys["project"])
    delete = api.delete("/suppressions/ada%40example.com", key=world.keys["project"])

    assert listing.json()["data"] == []
    assert_error(read, 404, "not_found")
    assert_error(delete, 404, "not_found")
    assert Suppression.objects.filter(project=world.other_project).count() == 1


def test_each_project_has_its_own_list(api, world):
    mine = api.post("/suppressions", {"email": "ada@example.com"}, key=world.keys["project"])
    theirs = api.post(
        "/suppressions", {"email": "ada@example.com"}, key=world.keys["other_project"]
    )

    assert mine.status_code == 201
    assert theirs.status_code == 201
    assert Suppression.objects.count() == 2


def test_a_read_only_key_can_read_but_not_write(api, world):
    SuppressionFactory(project=world.project, email="ada@example.com")
    key = world.keys["read_only"]

    assert api.get("/suppressions", key=key).status_code == 200
    assert api.get("/suppressions/ada%40example.com", key=key).status_code == 200
    assert_error(api.post("/suppressions", {"email": "bob@example.com"}, key=key), 403, "forbidden")
    assert_error(api.delete("/suppressions/ada%40example.com", key=key), 403, "forbidden")
    assert list(Suppression.objects.values_list("email", flat=True)) == ["ada@example.com"]


def test_a_sending_key_cannot_change_the_list(api, world):
    key = world.keys["sending"]

    assert_error(api.get("/suppressions", key=key), 403, "forbidden")
    assert_error(api.post("/suppressions", {"email": "bob@example.com"}, key=key), 403, "forbidden")


def test_a_viewers_personal_key_reads_and_an_owners_writes(api, world):
    viewer = world.keys["personal_viewer"]
    owner = world.keys["personal_owner"]

    assert api.get("/suppressions", key=viewer, project=world.project.id).status_code == 200
    assert_error(
        api.post("/suppressions", {"email": "a@example.com"}, key=viewer, project=world.project.id),
        403,
        "forbidden",
    )
    created = api.post(
        "/suppressions", {"email": "a@example.com"}, key=owner, project=world.project.id
    )
    assert created.status_code == 201


def test_a_personal_key_without_a_project_header_is_told_to_name_one(api, world):
    response = api.get("/suppressions", key=world.keys["personal_owner"])

    assert_error(response, 400, "project_required")


def test_no_key_is_a_401(api, world):
    assert_error(api.get("/suppressions"), 401, "unauthenticated")
    assert_error(api.delete("/suppressions/ada%40example.com"), 401, "unauthenticated")
