"""`POST /imports/{id}/actions/commit/execute`: the commit applies exactly the previewed
plan, in chunks on the work-queue kit, once per idempotency key; data that moved since the
preview is a 409 with nothing applied (docs/API.md, Imports)."""

import pytest
from django.test import override_settings

from contacts.audiences.models import Audience, AudienceMembership
from contacts.models import Contact
from contacts.topics.models import Subscription, Topic
from events.models import Event, EventSource
from imports.models import Import, ImportChunk
from imports.services.commit import import_chunks_apply_batch
from imports.services.planning import chunks_planned
from tenancy.preparedactions.models import PreparedAction
from tests.contacts.factories import ContactFactory
from tests.imports.conftest import csv_text, drain, error_of

pytestmark = pytest.mark.django_db

MAPPING = {
    "Email": "email",
    "First name": "fields.first_name",
    "List": "audience",
    "Topic": "topic",
}


@pytest.fixture
def newsletter(world):
    return Topic.objects.create(project=world.project, name="Newsletter")


@pytest.fixture
def mixed(imports, world, newsletter):
    """New, changed, unchanged, invalid and duplicate rows, with audiences and topics."""
    vip = Audience.objects.create(project=world.project, name="VIP")
    bob = ContactFactory(project=world.project, email="bob@example.com", fields={"x": 1})
    carl = ContactFactory(
        project=world.project, email="carl@example.com", fields={"first_name": "Carl"}
    )
    AudienceMembership.objects.create(audience=vip, contact=carl)
    data = imports.uploaded(
        csv_text(
            "Email,First name,List,Topic",
            "ada@example.com,Ada,VIP,Newsletter",
            "bob@example.com,Bob,Leads,",
            "carl@example.com,Carl,vip,",
            "not-an-email,Nobody,VIP,",
            "ADA@example.com,Ada again,Other,",
            "erin@example.com,,,newsletter",
        ),
        MAPPING,
    )
    return data["id"], bob, carl


def system_events(name=None):
    events = Event.objects.filter(source=EventSource.SYSTEM)
    if name is not None:
        events = events.filter(event=f"sendrealm.{name}")
    return events


def previewed_and_committed(imports, import_id, key="commit-1"):
    preview = imports.previewed(import_id)
    response = imports.commit(import_id, preview["prepared_action_id"], key)
    assert response.status_code == 202, response.json()
    drain()
    return preview, response.json()["data"]


def test_preview_and_commit_agree_row_for_row(imports, world, mixed):
    import_id, _, carl = mixed
    record = Import.objects.get(id=import_id)
    planned = [
        plan
        for chunk in chunks_planned(record=record, project=world.project)
        for plan in chunk.plans
    ]
    carl_version = carl.updated_at

    preview, _ = previewed_and_committed(imports, import_id)

    contacts = {c.email: c for c in Contact.objects.filter(project=world.project)}
    assert [(plan.row.row_number, plan.action, plan.changes) for plan in planned] == [
        (1, "create", ["contacts_created", "memberships_created", "subscriptions_created"]),
        (2, "update", ["contacts_updated", "audiences_created", "memberships_created"]),
        (3, "skip", []),
        (4, None, []),
        (5, None, []),
        (6, "create", ["contacts_created", "subscriptions_created"]),
    ]
    # Row 1: created with its field, in VIP, subscribed.
    ada = contacts["ada@example.com"]
    assert ada.fields == {"first_name": "Ada"}
    # Row 2: merged; a new audience made and joined.
    assert contacts["bob@example.com"].fields == {"x": 1, "first_name": "Bob"}
    # Row 3: untouched.
    assert contacts["carl@example.com"].updated_at == carl_version
    # Rows 4 and 5: nothing of them (no "Ada again", no audience "Other").
    assert not Audience.objects.filter(name="Other").exists()
    # Row 6: created without fields, subscribed.
    assert contacts["erin@example.com"].fields == {}
    assert set(contacts) == {
        "ada@example.com",
        "bob@example.com",
        "carl@example.com",
        "erin@example.com",
    }
    memberships = {
        (m.audience.name, m.contact.email)
        for m in AudienceMembership.objects.select_related("audience", "contact")
    }
    assert memberships == {
        ("VIP", "ada@example.com"),
        ("VIP", "carl@example.com"),
        ("Leads", "bob@example.com"),
    }
    subscriptions = {(s.contact.email, s.status, s.source) for s in Subscription.objects.all()}
    assert subscriptions == {
        ("ada@example.com", "subscribed", "import"),
        ("erin@example.com", "subscribed", "import"),
    }
    assert preview["changes"] == {
        "contacts_created": 2,
        "contacts_updated": 1,
        "properties_created": 0,
        "audiences_created": 1,
        "memberships_created": 2,
        "memberships_updated": 0,
        "subscriptions_created": 2,
        "subscriptions_updated": 0,
    }


def test_commit_answers_202_committing_and_the_worker_makes_it_committed(imports, mixed, clock):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)

    response = imports.commit(import_id, preview["prepared_action_id"])

    assert response.status_code == 202
    body = response.json()
    assert body["status"] == 202
    data = body["data"]
    assert (data["id"], data["status"], data["commit_rows"], data["committed_rows"]) == (
        import_id,
        "committing",
        3,
        0,
    )
    assert data["progress"] == 0.0
    assert drain() == 1
    done = imports.get(import_id)
    assert (done["status"], done["committed_rows"], done["progress"]) == ("committed", 3, 1.0)
    assert done["committed_at"] == "2026-01-01T12:00:00Z"


@override_settings(IMPORT_CHUNK_ROWS=2)
def test_a_commit_runs_in_chunks_with_progress_on_the_import(imports, world):
    data = imports.uploaded(
        csv_text("Email", *(f"p{n}@example.com" for n in range(7))), {"Email": "email"}
    )
    preview = imports.previewed(data["id"])
    imports.commit(data["id"], preview["prepared_action_id"])

    progress = []
    while import_chunks_apply_batch():
        current = imports.get(data["id"])
        progress.append((current["status"], current["committed_rows"]))

    assert progress == [
        ("committing", 2),
        ("committing", 4),
        ("committing", 6),
        ("committed", 7),
    ]
    assert world.project.contacts.count() == 7


def test_a_commit_with_nothing_to_change_is_committed_at_once(imports, world):
    ContactFactory(project=world.project, email="ada@example.com")
    data = imports.uploaded(csv_text("Email", "ada@example.com"), {"Email": "email"})
    preview = imports.previewed(data["id"])

    response = imports.commit(data["id"], preview["prepared_action_id"])

    assert response.json()["data"]["status"] == "committed"
    assert drain() == 0


def test_a_file_of_a_header_alone_previews_and_commits_nothing(imports, world):
    data = imports.uploaded(csv_text("Email"), {"Email": "email"})

    preview = imports.previewed(data["id"])
    response = imports.commit(data["id"], preview["prepared_action_id"])

    assert preview["counts"] == [{"status": "valid", "rows": 0}, {"status": "invalid", "rows": 0}]
    assert preview["sample"] == []
    assert response.json()["data"]["status"] == "committed"
    assert world.project.contacts.count() == 0


# Data that moved since the preview


@pytest.mark.parametrize(
    "move",
    [
        "bob changed",
        "carl deleted",
        "ada created",
        "carl left VIP",
        "Leads created",
        "erin unsubscribed",
    ],
)
def test_contacts_changed_since_the_preview_are_409_and_nothing_is_applied(
    imports, world, api, mixed, newsletter, move
):
    import_id, bob, carl = mixed
    preview = imports.previewed(import_id)
    key = world.keys["project"]
    if move == "bob changed":
        api.patch(f"/contacts/{bob.id}", {"fields": {"y": 2}}, key=key)
    elif move == "carl deleted":
        api.delete(f"/contacts/{carl.id}", key=key)
    elif move == "ada created":
        api.post("/contacts/upsert", {"email": "ada@example.com"}, key=key)
    elif move == "carl left VIP":
        vip = Audience.objects.get(name="VIP")
        api.delete(f"/audiences/{vip.id}/members/{carl.id}", key=key)
    elif move == "Leads created":
        api.post("/audiences", {"name": "leads"}, key=key)
    else:
        erin = api.post("/contacts/upsert", {"email": "erin@example.com"}, key=key).json()["data"]
        api.put(
            f"/contacts/{erin['id']}/subscriptions",
            {"topics": [{"topic_id": str(newsletter.id), "status": "unsubscribed"}]},
            key=key,
        )
    contacts_before = sorted(
        Contact.objects.values_list("id", "email", "fields", "updated_at", "deleted_at")
    )
    memberships_before = sorted(AudienceMembership.objects.values_list("audience_id", "contact_id"))
    events_before = system_events().count()

    response = imports.commit(import_id, preview["prepared_action_id"])

    assert error_of(response) == (409, "conflict")
    assert drain() == 0
    assert (
        sorted(Contact.objects.values_list("id", "email", "fields", "updated_at", "deleted_at"))
        == contacts_before
    )
    assert sorted(AudienceMembership.objects.values_list("audience_id", "contact_id")) == (
        memberships_before
    )
    assert system_events().count() == events_before
    assert Import.objects.get(id=import_id).status == "previewed"
    assert PreparedAction.objects.get(id=preview["prepared_action_id"]).status == "pending"


def test_a_change_the_plan_does_not_depend_on_commits(imports, world, api, mixed):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)
    # Someone else's contact, not in the file.
    api.post("/contacts/upsert", {"email": "zed@example.com"}, key=world.keys["project"])

    response = imports.commit(import_id, preview["prepared_action_id"])

    assert response.status_code == 202


def test_after_a_conflict_a_new_preview_commits(imports, world, api, mixed):
    import_id, bob, _ = mixed
    stale = imports.previewed(import_id)
    api.patch(f"/contacts/{bob.id}", {"fields": {"y": 2}}, key=world.keys["project"])
    assert imports.commit(import_id, stale["prepared_action_id"]).status_code == 409

    fresh = imports.previewed(import_id)
    response = imports.commit(import_id, fresh["prepared_action_id"], "commit-2")
    drain()

    assert response.status_code == 202
    bob.refresh_from_db()
    assert bob.fields == {"x": 1, "y": 2, "first_name": "Bob"}


# Prepared action rules


def test_the_same_idempotency_key_answers_the_first_result(imports, mixed, world):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)
    first = imports.commit(import_id, preview["prepared_action_id"], "same")
    drain()
    contacts = world.project.contacts.count()
    events = system_events().count()

    again = imports.commit(import_id, preview["prepared_action_id"], "same")

    assert again.status_code == 202
    assert again.json() == first.json()
    assert drain() == 0
    assert world.project.contacts.count() == contacts
    assert system_events().count() == events


def test_another_idempotency_key_after_the_commit_is_409(imports, mixed):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)
    imports.commit(import_id, preview["prepared_action_id"], "first")

    response = imports.commit(import_id, preview["prepared_action_id"], "second")

    assert error_of(response) == (409, "conflict")


def test_a_commit_of_an_expired_preview_is_422(imports, mixed, clock, world):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)
    clock.advance(seconds=901)

    response = imports.commit(import_id, preview["prepared_action_id"])

    assert error_of(response) == (422, "prepared_action_expired")
    assert drain() == 0
    assert world.project.contacts.count() == 2


def test_a_commit_of_a_replaced_preview_is_422_expired(imports, mixed):
    import_id, _, _ = mixed
    old = imports.previewed(import_id)
    imports.previewed(import_id)

    response = imports.commit(import_id, old["prepared_action_id"])

    assert error_of(response) == (422, "prepared_action_expired")


def test_a_prepared_action_of_another_import_is_422_invalid(imports, mixed):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)
    other = imports.uploaded(csv_text("Email", "zed@example.com"), {"Email": "email"})

    response = imports.commit(other["id"], preview["prepared_action_id"])

    assert error_of(response) == (422, "prepared_action_invalid")


def test_another_user_cannot_commit_the_owners_preview(imports, mixed, world):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)

    response = imports.commit(
        import_id, preview["prepared_action_id"], key=world.keys["personal_admin"]
    )

    assert error_of(response) == (422, "prepared_action_invalid")


@pytest.mark.parametrize("persona", ["project", "team"])
def test_an_integration_key_cannot_commit(imports, mixed, world, persona):
    import_id, _, _ = mixed
    preview = imports.previewed(import_id)

    response = imports.api.post(
        f"/imports/{import_id}/actions/commit/execute",
        {"prepared_action_id": preview["prepared_action_id"], "idempotency_key": "k"},
        key=world.keys[persona],
    )

    assert error_of(response) == (403, "forbidden")


def test_a_committed_import_cannot_be_previewed_again(imports, mixed):
    import_id, _, _ = mixed
    previewed_and_committed(imports, import_id)

    response = imports.preview(import_id)

    assert error_of(response) == (409, "conflict")


# Events, with trigger and with suppress


def test_suppress_records_no_events(imports, mixed):
    import_id, _, _ = mixed

    previewed_and_committed(imports, import_id)

    assert system_events().count() == 0


def test_trigger_records_the_events_an_api_call_would_and_none_for_skipped_rows(
    imports, world, newsletter
):
    vip = Audience.objects.create(project=world.project, name="VIP")
    bob = ContactFactory(project=world.project, email="bob@example.com", fields={"x": 1})
    carl = ContactFactory(project=world.project, email="carl@example.com", fields={"n": "Carl"})
    AudienceMembership.objects.create(audience=vip, contact=carl)
    data = imports.uploaded(
        csv_text(
            "Email,First name,List,Topic",
            "ada@example.com,Ada,VIP,Newsletter",
            "bob@example.com,Bob,,",
            "carl@example.com,,VIP,",
        ),
        MAPPING,
        automation_effects="trigger",
    )

    previewed_and_committed(imports, data["id"])

    ada = Contact.objects.get(email="ada@example.com")
    events = sorted(
        (e.event, e.email, e.contact_id) for e in system_events().order_by("created_at", "id")
    )
    assert events == sorted(
        [
            ("sendrealm.contact.created", "ada@example.com", ada.id),
            ("sendrealm.contact.updated", "bob@example.com", bob.id),
            ("sendrealm.audience.entered", "ada@example.com", ada.id),
            ("sendrealm.topic.subscribed", "ada@example.com", ada.id),
        ]
    )
    entered = system_events("audience.entered").get()
    assert entered.payload == {
        "audience_id": str(vip.id),
        "audience_name": "VIP",
        "contact_id": str(ada.id),
        "properties": {},
    }
    subscribed = system_events("topic.subscribed").get()
    assert subscribed.payload["source"] == "import"
    assert system_events("contact.created").get().payload == {
        "contact_id": str(ada.id),
        "email": "ada@example.com",
        "external_id": None,
    }


def test_a_subscription_to_an_opt_out_topic_records_no_event(imports, world):
    Topic.objects.create(project=world.project, name="Offers", default_status="subscribed")
    data = imports.uploaded(
        csv_text("Email,Topic", "ada@example.com,Offers"),
        {"Email": "email", "Topic": "topic"},
        automation_effects="trigger",
    )

    preview, _ = previewed_and_committed(imports, data["id"])

    assert preview["changes"]["subscriptions_created"] == 1
    assert Subscription.objects.get().status == "subscribed"
    assert list(system_events().values_list("event", flat=True)) == ["sendrealm.contact.created"]


def test_an_external_id_import_creates_and_updates_by_external_id(imports, world):
    existing = ContactFactory(
        project=world.project, email="bob@example.com", external_id="u-2", fields={}
    )
    data = imports.uploaded(
        csv_text("id,Plan", "u-1,pro", "u-2,free"), {"id": "external_id", "Plan": "fields.plan"}
    )

    previewed_and_committed(imports, data["id"])

    created = Contact.objects.get(external_id="u-1")
    assert (created.email, created.fields) == (None, {"plan": "pro"})
    existing.refresh_from_db()
    assert existing.fields == {"plan": "free"}


def test_json_rows_commit_their_json_values(imports, world):
    response = imports.upload_rows(
        [{"mail": "ada@example.com", "plan": {"tier": "pro", "seats": 3}, "id": 7}],
        {"mail": "email", "plan": "fields.plan", "id": "external_id"},
    )
    import_id = response.json()["data"]["id"]

    previewed_and_committed(imports, import_id)

    ada = Contact.objects.get(email="ada@example.com")
    assert (ada.external_id, ada.fields) == ("7", {"plan": {"tier": "pro", "seats": 3}})


def test_chunks_are_made_due_only_by_the_commit(imports, mixed):
    import_id, _, _ = mixed
    imports.previewed(import_id)

    assert drain() == 0
    assert ImportChunk.objects.get(import_record_id=import_id).next_attempt_at is None
