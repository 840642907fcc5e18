"""A contact import on the running product: uploaded, previewed and committed with the
owner's personal key, then its contacts found by lookup."""

from tests.e2e.client import unique, until

ROWS = 4


def test_an_import_is_uploaded_previewed_committed_and_its_contacts_found(personal):
    emails = [unique(f"imported{number}-") + "@example.com" for number in range(ROWS)]
    upload = personal.post(
        "/imports",
        {
            "rows": [{"Email": email, "Name": f"Person {n}"} for n, email in enumerate(emails)],
            "mapping": {"Email": "email", "Name": "fields.first_name"},
        },
        status=201,
    )
    preview = personal.post(f"/imports/{upload['id']}/preview")
    assert preview["counts"] == [
        {"status": "valid", "rows": ROWS},
        {"status": "invalid", "rows": 0},
    ], preview
    committing = personal.post(
        f"/imports/{upload['id']}/actions/commit/execute",
        {"prepared_action_id": preview["prepared_action_id"], "idempotency_key": unique("k-")},
        status=202,
    )
    assert committing["status"] in ("committing", "committed"), committing

    until(
        lambda: personal.get(f"/imports/{upload['id']}")["status"] == "committed",
        "the import committed",
    )
    for number, email in enumerate(emails):
        contact = personal.post("/contacts/lookup", {"email": email})
        assert contact["fields"] == {"first_name": f"Person {number}"}, contact
