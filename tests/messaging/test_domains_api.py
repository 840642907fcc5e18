"""Sending domains over HTTP: `GET|POST /domains`, `GET|DELETE /domains/{id}`."""

import base64
import logging
import uuid

import pytest
from cryptography.hazmat.primitives import serialization

from config.runtime import secrets
from messaging.models import Domain, DomainRecord
from tests.messaging.factories_domains import DomainFactory

pytestmark = pytest.mark.django_db


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == status
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str)
    assert isinstance(body["error"]["details"], str)
    return body["error"]


def public_key_of(record_value: str):
    tags = dict(part.strip().split("=", 1) for part in record_value.split(";"))
    return serialization.load_der_public_key(base64.b64decode(tags["p"]))


# --- create -----------------------------------------------------------------------------


def test_adding_a_domain_answers_201_with_the_records_to_publish(api, world, settings):
    settings.SENDING_SPF_INCLUDE = "spf.mail.test"

    response = api.post("/domains", {"name": "Example.COM"}, key=world.keys["project"])

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == 201
    data = body["data"]
    assert set(data) == {
        "id",
        "name",
        "status",
        "records",
        "dkim_selector",
        "created_at",
        "verified_at",
    }
    uuid.UUID(data["id"])
    assert data["name"] == "example.com"
    assert data["status"] == "pending"
    assert data["verified_at"] is None
    assert data["created_at"].endswith("Z")
    selector = data["dkim_selector"]
    spf, dkim, dmarc = data["records"]
    assert spf == {
        "type": "TXT",
        "name": "example.com",
        "value": "v=spf1 include:spf.mail.test ~all",
        "status": "pending",
    }
    assert dkim["type"] == "TXT"
    assert dkim["name"] == f"{selector}._domainkey.example.com"
    assert dkim["value"].startswith("v=DKIM1; k=rsa; p=")
    assert dkim["status"] == "pending"
    assert public_key_of(dkim["value"]).key_size == 2048
    assert dmarc["type"] == "TXT"
    assert dmarc["name"] == "_dmarc.example.com"
    assert dmarc["value"].startswith("v=DMARC1; p=none")
    assert dmarc["status"] == "pending"


def test_the_private_key_is_stored_encrypted_and_never_answered_or_logged(api, world, caplog):
    caplog.set_level(logging.DEBUG)

    response = api.post("/domains", {"name": "example.com"}, key=world.keys["project"])

    domain = Domain.objects.get()
    stored = domain.dkim_private_key_encrypted
    assert "PRIVATE KEY" not in stored
    pem = secrets.decrypt(stored)
    assert pem.startswith("-----BEGIN RSA PRIVATE KEY-----")
    private_key = serialization.load_pem_private_key(pem.encode(), password=None)
    published = public_key_of(response.json()["data"]["records"][1]["value"])
    assert private_key.public_key().public_numbers() == published.public_numbers()
    for text in (response.content.decode(), caplog.text):
        assert "PRIVATE KEY" not in text
        assert stored not in text


def test_each_domain_gets_its_own_key_and_selector(api, world):
    first = api.post("/domains", {"name": "one.example"}, key=world.keys["project"]).json()
    second = api.post("/domains", {"name": "two.example"}, key=world.keys["project"]).json()

    assert first["data"]["dkim_selector"] != second["data"]["dkim_selector"]
    assert first["data"]["records"][1]["value"] != second["data"]["records"][1]["value"]


def test_an_international_name_is_stored_in_its_ascii_form(api, world):
    response = api.post("/domains", {"name": "Bücher.Example"}, key=world.keys["project"])

    assert response.status_code == 201
    assert response.json()["data"]["name"] == "xn--bcher-kva.example"
    assert response.json()["data"]["records"][2]["name"] == "_dmarc.xn--bcher-kva.example"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "localhost"}, "invalid_domain"),
        ({"name": "example.com."}, "invalid_domain"),
        ({"name": "-bad.example.com"}, "invalid_domain"),
        ({"name": "bad-.example.com"}, "invalid_domain"),
        ({"name": "exa mple.com"}, "invalid_domain"),
        ({"name": "a..example.com"}, "invalid_domain"),
        ({"name": "under_score.example.com"}, "invalid_domain"),
        ({"name": "192.168.0.1"}, "invalid_domain"),
        ({"name": "https://example.com"}, "invalid_domain"),
        ({"name": f"{'a' * 64}.example.com"}, "invalid_domain"),
        ({"name": ".".join(["abcdefghi"] * 25) + ".com"}, "invalid_domain"),
        ({"name": 42}, "invalid_domain"),
        ({"name": ""}, "blank"),
        ({"name": None}, "null"),
        ({"name": ["example.com"]}, "invalid"),
        ({}, "required"),
    ],
)
def test_a_name_that_is_not_a_domain_is_a_400_that_stores_nothing(api, world, body, code):
    error = assert_error(
        api.post("/domains", body, key=world.keys["project"]), 400, "validation_error"
    )

    assert [(issue["path"], issue["code"]) for issue in error["issues"]] == [("name", code)]
    assert Domain.objects.count() == 0
    assert DomainRecord.objects.count() == 0


def test_an_unknown_member_is_a_400(api, world):
    error = assert_error(
        api.post("/domains", {"name": "example.com", "selector": "x"}, key=world.keys["project"]),
        400,
        "validation_error",
    )

    assert error["issues"][0]["path"] == "selector"
    assert Domain.objects.count() == 0


def test_a_name_the_project_already_has_is_a_409_in_any_case(api, world):
    api.post("/domains", {"name": "example.com"}, key=world.keys["project"])

    error = assert_error(
        api.post("/domains", {"name": "EXAMPLE.com"}, key=world.keys["project"]), 409, "conflict"
    )

    assert error["issues"][0]["path"] == "name"
    assert Domain.objects.count() == 1
    assert DomainRecord.objects.count() == 3


def test_another_project_may_add_the_same_name(api, world):
    DomainFactory(project=world.other_project, name="example.com")

    response = api.post("/domains", {"name": "example.com"}, key=world.keys["project"])

    assert response.status_code == 201


# --- read and list ----------------------------------------------------------------------


def test_the_list_shows_the_projects_domains_with_their_records(api, world, clock):
    for name in ("a.example", "b.example"):
        clock.advance(seconds=1)
        DomainFactory(project=world.project, name=name)
    DomainFactory(project=world.other_project, name="c.example")

    response = api.get("/domains", key=world.keys["project"])

    assert response.status_code == 200
    body = response.json()
    assert [item["name"] for item in body["data"]] == ["a.example", "b.example"]
    assert body["metadata"]["total"] == 2
    assert [record["name"] for record in body["data"][0]["records"]] == [
        "a.example",
        f"{body['data'][0]['dkim_selector']}._domainkey.a.example",
        "_dmarc.a.example",
    ]


def test_a_page_of_domains_costs_three_queries_whatever_its_size(
    api, world, django_assert_num_queries
):
    for index in range(4):
        DomainFactory(project=world.project, name=f"d{index}.example")
    api.get("/domains", key=world.keys["project"])  # caches the key and project

    with django_assert_num_queries(3):
        response = api.get("/domains", key=world.keys["project"])

    assert len(response.json()["data"]) == 4


def test_one_domain_is_read_by_id(api, world):
    domain = DomainFactory(project=world.project, name="example.com", verified=True)

    response = api.get(f"/domains/{domain.id}", key=world.keys["project"])

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == str(domain.id)
    assert data["status"] == "verified"
    assert data["verified_at"].endswith("Z")
    assert [record["status"] for record in data["records"]] == ["verified"] * 3


@pytest.mark.parametrize("method", ["get", "delete"])
def test_another_projects_or_an_unknown_domain_is_a_404(api, world, method):
    theirs = DomainFactory(project=world.other_project)

    for domain_id in (theirs.id, uuid.uuid4()):
        response = getattr(api, method)(f"/domains/{domain_id}", key=world.keys["project"])
        assert_error(response, 404, "not_found")
    assert Domain.objects.filter(pk=theirs.pk).exists()


def test_a_path_that_is_not_a_domain_id_is_a_404(api, world):
    assert_error(api.get("/domains/example.com", key=world.keys["project"]), 404, "not_found")
    assert_error(api.get("/domains/", key=world.keys["project"]), 404, "not_found")


# --- delete -----------------------------------------------------------------------------


def test_deleting_a_domain_answers_200_with_it_and_removes_its_records(api, world):
    domain = DomainFactory(project=world.project, name="example.com")

    response = api.delete(f"/domains/{domain.id}", key=world.keys["project"])

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == str(domain.id)
    assert data["name"] == "example.com"
    assert len(data["records"]) == 3
    assert not Domain.objects.filter(pk=domain.pk).exists()
    assert DomainRecord.objects.count() == 0
    assert_error(api.get(f"/domains/{domain.id}", key=world.keys["project"]), 404, "not_found")


def test_a_deleted_name_can_be_added_again_with_a_new_key(api, world):
    created = api.post("/domains", {"name": "example.com"}, key=world.keys["project"]).json()
    api.delete(f"/domains/{created['data']['id']}", key=world.keys["project"])

    again = api.post("/domains", {"name": "example.com"}, key=world.keys["project"])

    assert again.status_code == 201
    assert again.json()["data"]["records"][1]["value"] != created["data"]["records"][1]["value"]


# --- keys -------------------------------------------------------------------------------


def test_a_read_only_key_can_read_domains_but_not_change_them(api, world):
    domain = DomainFactory(project=world.project)
    key = world.keys["read_only"]

    assert api.get("/domains", key=key).status_code == 200
    assert api.get(f"/domains/{domain.id}", key=key).status_code == 200
    assert_error(api.post("/domains", {"name": "new.example"}, key=key), 403, "forbidden")
    assert_error(api.delete(f"/domains/{domain.id}", key=key), 403, "forbidden")
    assert_error(api.post(f"/domains/{domain.id}/verify", key=key), 403, "forbidden")
    assert list(Domain.objects.values_list("pk", flat=True)) == [domain.pk]


def test_a_sending_key_cannot_reach_domains(api, world):
    assert_error(api.get("/domains", key=world.keys["sending"]), 403, "forbidden")


def test_a_personal_key_of_a_member_adds_a_domain_with_the_project_header(api, world):
    response = api.post(
        "/domains",
        {"name": "example.com"},
        key=world.keys["personal_member"],
        project=world.project.id,
    )

    assert response.status_code == 201
    assert Domain.objects.get().project == world.project


def test_a_wrong_method_is_a_405_and_no_key_a_401(api, world):
    domain = DomainFactory(project=world.project)
    key = world.keys["project"]

    assert_error(api.patch(f"/domains/{domain.id}", {}, key=key), 405, "method_not_allowed")
    assert_error(api.get(f"/domains/{domain.id}/verify", key=key), 405, "method_not_allowed")
    assert_error(api.get("/domains"), 401, "unauthenticated")
