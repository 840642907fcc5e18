"""`POST /imports/{id}/preview`: the spec's Import preview object and nothing more, exact
counts and change totals over every row, at most five sample rows (invalid first), and who
may call it (docs/API.md, Imports)."""

import pytest
from django.test import override_settings

from contacts.audiences.models import Audience, AudienceMembership
from contacts.topics.models import Subscription, SubscriptionSource, Topic
from imports.models import Import, ImportChunk
from tenancy.access import ALL_SCOPES
from tenancy.models import KeyKind, Scope
from tenancy.preparedactions.models import PreparedAction
from tenancy.services import api_key_create
from tests.contacts.factories import ContactFactory
from tests.imports.conftest import Imports, csv_text, error_of, issue_paths

pytestmark = pytest.mark.django_db

CHANGES = [
    "contacts_created",
    "contacts_updated",
    "properties_created",
    "audiences_created",
    "memberships_created",
    "memberships_updated",
    "subscriptions_created",
    "subscriptions_updated",
]


def totals(**counts):
    return {name: counts.get(name, 0) for name in CHANGES}


@pytest.fixture
def mixed(imports, world):
    """A file with new, changed, unchanged, invalid and duplicate rows."""
    changed = ContactFactory(
        project=world.project, email="bob@example.com", fields={"first_name": "Robert"}
    )
    unchanged = ContactFactory(
        project=world.project, email="carl@example.com", fields={"first_name": "Carl"}
    )
    content = csv_text(
        "Email,First name",
        "ada@example.com,Ada",
        "bob@example.com,Bob",
        "carl@example.com,Carl",
        "not-an-email,Nobody",
        "ADA@example.com,Ada again",
        ",No email",
        "dora@example.com,",
    )
    data = imports.uploaded(content, {"Email": "email", "First name": "fields.first_name"})
    return data["id"], changed, unchanged


def test_a_preview_is_the_spec_object_and_nothing_more(imports, mixed, clock):
    import_id, changed, _ = mixed

    response = imports.preview(import_id)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "data"}
    data = body["data"]
    prepared_action_id = data["prepared_action_id"]
    assert data == {
        "import_id": import_id,
        "prepared_action_id": prepared_action_id,
        "operation": "imports.commit",
        "expires_at": "2026-01-01T12:15:00Z",
        "counts": [{"status": "valid", "rows": 4}, {"status": "invalid", "rows": 3}],
        "sample": [
            {"row_number": 4, "status": "invalid", "error_code": "invalid_email", "result": None},
            {"row_number": 5, "status": "invalid", "error_code": "duplicate_row", "result": None},
            {"row_number": 6, "status": "invalid", "error_code": "missing_email", "result": None},
            {
                "row_number": 1,
                "status": "valid",
                "error_code": None,
                "result": {
                    "action": "create",
                    "identity": "ada@example.com",
                    "resource_id": None,
                    "version": None,
                    "mapped": {"email": "ada@example.com", "fields": {"first_name": "Ada"}},
                    "changes": ["contacts_created"],
                },
            },
            {
                "row_number": 2,
                "status": "valid",
                "error_code": None,
                "result": {
                    "action": "update",
                    "identity": "bob@example.com",
                    "resource_id": str(changed.id),
                    "version": changed.updated_at.isoformat().replace("+00:00", "Z"),
                    "mapped": {"email": "bob@example.com", "fields": {"first_name": "Bob"}},
                    "changes": ["contacts_updated"],
                },
            },
        ],
        "effects": {
            "import_id": import_id,
            "valid_rows": 4,
            "invalid_rows": 3,
            "automation_effects": "suppress",
            "changes": totals(contacts_created=2, contacts_updated=1),
        },
        "changes": totals(contacts_created=2, contacts_updated=1),
    }
    prepared = PreparedAction.objects.get(id=prepared_action_id)
    assert (prepared.operation, prepared.resource_id) == ("imports.commit", import_id)
    assert prepared.effects == data["effects"]
    record = Import.objects.get(id=import_id)
    assert record.status == "previewed"
    assert str(record.prepared_action_id) == prepared_action_id
    assert record.sample == data["sample"]
    assert (record.valid_rows, record.invalid_rows) == (4, 3)


def test_a_preview_changes_nothing(imports, mixed, world):
    import_id, changed, _ = mixed

    imports.previewed(import_id)

    changed.refresh_from_db()
    assert changed.fields == {"first_name": "Robert"}
    assert world.project.contacts.count() == 2


def test_unchanged_rows_plan_a_skip_with_no_changes(imports, world):
    carl = ContactFactory(
        project=world.project, email="carl@example.com", fields={"first_name": "Carl", "x": 1}
    )
    data = imports.uploaded(
        csv_text("Email,First name", "CARL@example.com,Carl"),
        {"Email": "email", "First name": "fields.first_name"},
    )

    preview = imports.previewed(data["id"])

    assert preview["sample"][0]["result"] == {
        "action": "skip",
        "identity": "carl@example.com",
        "resource_id": str(carl.id),
        "version": carl.updated_at.isoformat().replace("+00:00", "Z"),
        "mapped": {"email": "carl@example.com", "fields": {"first_name": "Carl"}},
        "changes": [],
    }
    assert preview["changes"] == totals()


def test_the_sample_holds_at_most_five_rows_invalid_first(imports):
    rows = [f"bad{n}" for n in range(3)] + [f"p{n}@example.com" for n in range(10)]
    rows += [f"worse{n}" for n in range(4)]
    data = imports.uploaded(csv_text("Email", *rows), {"Email": "email"})

    preview = imports.previewed(data["id"])

    assert [(row["row_number"], row["status"]) for row in preview["sample"]] == [
        (1, "invalid"),
        (2, "invalid"),
        (3, "invalid"),
        (14, "invalid"),
        (15, "invalid"),
    ]
    assert preview["counts"] == [{"status": "valid", "rows": 10}, {"status": "invalid", "rows": 7}]


@override_settings(IMPORT_CHUNK_ROWS=3)
def test_counts_and_totals_are_exact_over_every_row_and_chunk(imports, world):
    ContactFactory(project=world.project, email="p4@example.com", fields={"plan": "free"})
    ContactFactory(project=world.project, email="p5@example.com", fields={"plan": "pro"})
    data = imports.uploaded(
        csv_text("Email,Plan", *(f"p{n}@example.com,pro" for n in range(10)), "x,pro"),
        {"Email": "email", "Plan": "fields.plan"},
    )

    preview = imports.previewed(data["id"])

    assert preview["counts"] == [{"status": "valid", "rows": 10}, {"status": "invalid", "rows": 1}]
    assert preview["changes"] == totals(contacts_created=8, contacts_updated=1)
    chunks = ImportChunk.objects.filter(import_record_id=data["id"]).order_by("first_row")
    assert [(c.first_row, c.last_row, c.planned_rows) for c in chunks] == [
        (1, 3, 3),
        (4, 6, 2),
        (7, 9, 3),
        (10, 11, 1),
    ]


def test_new_fields_audiences_memberships_and_subscriptions_are_counted(imports, world):
    vip = Audience.objects.create(project=world.project, name="VIP")
    news = Topic.objects.create(project=world.project, name="Newsletter")
    Topic.objects.create(project=world.project, name="Offers", default_status="subscribed")
    member = ContactFactory(project=world.project, email="bob@example.com", fields={"plan": "x"})
    AudienceMembership.objects.create(audience=vip, contact=member)
    Subscription.objects.create(
        topic=news,
        contact=member,
        status="unsubscribed",
        source=SubscriptionSource.UNSUBSCRIBE_LINK,
        changed_at=member.created_at,
    )
    data = imports.uploaded(
        csv_text(
            "Email,Plan,Team,List,Topic",
            "ada@example.com,pro,blue,VIP,newsletter",
            "bob@example.com,x,Blue,vip,Newsletter",
            "carl@example.com,,,Leads,Offers",
            "dora@example.com,,red,leads,",
        ),
        {
            "Email": "email",
            "Plan": "fields.plan",
            "Team": "fields.team",
            "List": "audience",
            "Topic": "topic",
        },
    )

    preview = imports.previewed(data["id"])

    plans = {row["row_number"]: row["result"] for row in preview["sample"]}
    assert plans[1]["changes"] == [
        "contacts_created",
        "properties_created",
        "memberships_created",
        "subscriptions_created",
    ]
    # A member already, unsubscribed by choice (kept: imports never override consent).
    assert plans[2]["changes"] == ["contacts_updated"]
    assert plans[3]["changes"] == [
        "contacts_created",
        "audiences_created",
        "memberships_created",
        "subscriptions_created",
    ]
    assert plans[4]["changes"] == ["contacts_created", "memberships_created"]
    assert preview["changes"] == totals(
        contacts_created=3,
        contacts_updated=1,
        properties_created=1,
        audiences_created=1,
        memberships_created=3,
        subscriptions_created=2,
    )


def test_rows_that_cannot_apply_to_the_current_contacts_are_invalid(imports, world):
    ContactFactory(project=world.project, email="owner@example.com", external_id="ext-1")
    Topic.objects.create(project=world.project, name="Newsletter")
    world.project.contact_fields_limit_bytes = 1024
    world.project.save()
    data = imports.uploaded(
        csv_text(
            "Email,External,Topic,Bio",
            "ada@example.com,ext-1,,",
            "bob@example.com,,Unknown topic,",
            f"carl@example.com,,,{'x' * 1100}",
            "dora@example.com,ext-2,Newsletter,short",
        ),
        {"Email": "email", "External": "external_id", "Topic": "topic", "Bio": "fields.bio"},
    )

    preview = imports.previewed(data["id"])

    assert [(row["row_number"], row["error_code"]) for row in preview["sample"]] == [
        (1, "invalid_value"),
        (2, "invalid_value"),
        (3, "invalid_value"),
        (4, None),
    ]


def test_values_of_fields_named_like_credentials_are_masked_in_the_sample(imports):
    data = imports.uploaded(
        csv_text("Email,Password,Api-Key,Name", "ada@example.com,hunter2,k-123,Ada"),
        {
            "Email": "email",
            "Password": "fields.password",
            "Api-Key": "fields.api-key",
            "Name": "fields.name",
        },
    )

    preview = imports.previewed(data["id"])

    assert preview["sample"][0]["result"]["mapped"]["fields"] == {
        "password": "[redacted]",
        "api-key": "[redacted]",
        "name": "Ada",
    }
    assert "hunter2" not in str(Import.objects.get(id=data["id"]).sample)


def test_a_new_preview_replaces_the_previous_one(imports, mixed):
    import_id, _, _ = mixed

    first = imports.previewed(import_id)
    second = imports.previewed(import_id)

    assert first["prepared_action_id"] != second["prepared_action_id"]
    assert str(Import.objects.get(id=import_id).prepared_action_id) == second["prepared_action_id"]
    assert ImportChunk.objects.filter(import_record_id=import_id).count() == 1


def test_an_import_after_a_change_of_email_normalisation_must_be_uploaded_again(
    imports, mixed, world
):
    import_id, _, _ = mixed
    imports.api.patch(
        "/project", {"policies": {"email_normalization": "gmail"}}, key=world.keys["project"]
    )

    response = imports.preview(import_id)

    assert error_of(response) == (409, "conflict")


# Who may preview


@pytest.mark.parametrize("persona", ["project", "team", "read_only"])
def test_an_integration_key_gets_403(imports, world, mixed, persona):
    import_id, _, _ = mixed

    response = imports.api.post(f"/imports/{import_id}/preview", {}, key=world.keys[persona])

    assert error_of(response) == (403, "forbidden")
    assert not PreparedAction.objects.exists()


def test_a_personal_key_must_select_the_project(imports, world, mixed):
    import_id, _, _ = mixed

    response = imports.api.post(
        f"/imports/{import_id}/preview", {}, key=world.keys["personal_owner"]
    )

    assert error_of(response) == (400, "project_required")


@pytest.mark.parametrize("persona", ["personal_owner", "personal_admin", "personal_member"])
def test_roles_that_hold_the_scope_may_preview(imports, world, mixed, persona):
    import_id, _, _ = mixed

    response = imports.preview(import_id, key=world.keys[persona])

    assert response.status_code == 200


def test_a_viewer_may_not_preview(imports, world, mixed):
    import_id, _, _ = mixed

    response = imports.preview(import_id, key=world.keys["personal_viewer"])

    assert error_of(response) == (403, "forbidden")


def test_a_personal_key_without_the_imports_scope_may_not_preview(imports, world, mixed):
    import_id, _, _ = mixed
    scopes = ALL_SCOPES - {Scope.IMPORTS_MANAGE}
    _, key = api_key_create(
        name="no imports",
        team=world.team,
        kind=KeyKind.PERSONAL,
        user=world.users["owner"],
        scopes=scopes,
        grants={world.project: ALL_SCOPES},
    )

    response = imports.preview(import_id, key=key)

    assert error_of(response) == (403, "forbidden")


def test_a_grant_without_the_imports_scope_may_not_preview(imports, world, mixed):
    import_id, _, _ = mixed
    _, key = api_key_create(
        name="grant without imports",
        team=world.team,
        kind=KeyKind.PERSONAL,
        user=world.users["owner"],
        scopes=ALL_SCOPES,
        grants={world.project: ALL_SCOPES - {Scope.IMPORTS_MANAGE}},
    )

    response = imports.preview(import_id, key=key)

    assert error_of(response) == (403, "forbidden")


def test_another_projects_import_is_404(imports, world, api):
    other = Imports(api, world)
    other.project = world.other_project.id
    data = other.uploaded(csv_text("Email", "a@example.com"), {"Email": "email"})

    response = imports.preview(data["id"])

    assert error_of(response) == (404, "not_found")


def test_the_body_must_be_an_empty_object(imports, mixed):
    import_id, _, _ = mixed

    response = imports.preview(import_id, body={"confirm": True})

    assert error_of(response) == (400, "validation_error")
    assert issue_paths(response) == ["confirm"]
    assert not PreparedAction.objects.exists()
