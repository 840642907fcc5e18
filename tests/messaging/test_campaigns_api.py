"""Campaigns and push campaigns through the API: drafts, their checks, every transition
and its 409, channels kept apart, keys and scopes, and the prepared send."""

import datetime as dt

import pytest

from messaging.apps import SEND_SCOPE
from messaging.models import Campaign, CampaignFanout, CampaignStatus, Email
from tenancy.models import Scope
from tenancy.preparedactions.registry import operation_get
from tests.contacts.audiences.factories import AudienceFactory
from tests.contacts.topics.factories import TopicFactory
from tests.messaging.factories_campaigns import CampaignFactory, audience_with, email_template_id
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory
from tests.pushproviders.sending import push_world

pytestmark = pytest.mark.django_db

SHAPE = {
    "id",
    "name",
    "channel",
    "status",
    "template_id",
    "template_version_id",
    "audience_id",
    "topic_id",
    "app_id",
    "from",
    "scheduled_at",
    "transactional",
    "recipient_count",
    "review_note",
    "submitted_at",
    "approved_at",
    "sent_at",
    "canceled_at",
    "stats",
    "created_at",
    "updated_at",
    "deleted_at",
}
STATS = {"queued", "sent", "delivered", "failed", "suppressed", "opened", "clicked"}


@pytest.fixture
def template_id(api, world):
    return email_template_id(api, world)


@pytest.fixture
def sender(world):
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()


@pytest.fixture
def audience(world):
    return audience_with(world.project, 3, first_name="Ada")


def create(api, world, *, path="/campaigns", key="project", **body):
    return api.post(path, body, key=world.keys[key])


def draft(api, world, template_id, audience, **extra):
    response = create(
        api,
        world,
        name="Spring sale",
        template_id=template_id,
        audience_id=str(audience.id),
        **extra,
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]


def error_of(response):
    body = response.json()
    return body["error"]["code"], [issue["path"] for issue in body["error"]["issues"]]


# --- drafts ----------------------------------------------------------------------------------


def test_a_draft_is_created_with_every_member_of_the_campaign_shape(
    api, world, template_id, audience
):
    response = create(
        api,
        world,
        name="Spring sale",
        template_id=template_id,
        audience_id=str(audience.id),
        **{"from": "News <news@example.com>"},
    )

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == 201
    data = body["data"]
    assert set(data) == SHAPE
    assert data["channel"] == "email"
    assert data["status"] == "draft"
    assert data["from"] == "News <news@example.com>"
    assert data["audience_id"] == str(audience.id)
    assert data["topic_id"] is None
    assert data["app_id"] is None
    assert data["recipient_count"] is None
    assert data["template_version_id"] is None
    assert data["stats"] == dict.fromkeys(STATS, 0)
    assert data["deleted_at"] is None
    assert data["created_at"].endswith("Z")


def test_a_draft_can_go_to_a_topic_instead(api, world, template_id):
    topic = TopicFactory(project=world.project)

    response = create(api, world, name="Digest", template_id=template_id, topic_id=str(topic.id))

    assert response.status_code == 201
    assert response.json()["data"]["topic_id"] == str(topic.id)
    assert response.json()["data"]["audience_id"] is None


@pytest.mark.parametrize(
    "targets",
    [{}, {"audience": True, "topic": True}],
    ids=["neither", "both"],
)
def test_a_draft_needs_exactly_one_of_an_audience_or_a_topic(api, world, template_id, targets):
    body = {"name": "x", "template_id": template_id}
    if targets.get("audience"):
        body["audience_id"] = str(AudienceFactory(project=world.project).id)
    if targets.get("topic"):
        body["topic_id"] = str(TopicFactory(project=world.project).id)

    response = create(api, world, **body)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert Campaign.objects.count() == 0


def test_an_audience_of_another_project_is_not_found_at_its_path(api, world, template_id):
    foreign = AudienceFactory(project=world.other_project)

    response = create(api, world, name="x", template_id=template_id, audience_id=str(foreign.id))

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["audience_id"])
    assert response.json()["error"]["issues"][0]["code"] == "not_found"
    assert Campaign.objects.count() == 0


def test_a_topic_of_another_project_is_not_found_at_its_path(api, world, template_id):
    foreign = TopicFactory(project=world.foreign_project)

    response = create(api, world, name="x", template_id=template_id, topic_id=str(foreign.id))

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["topic_id"])


def test_a_template_of_another_project_is_not_found(api, world, audience):
    foreign = MessageTemplateFactory(project=world.other_project)

    response = create(
        api, world, name="x", template_id=str(foreign.id), audience_id=str(audience.id)
    )

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["template_id"])


def test_a_push_template_cannot_make_an_email_campaign(api, world, audience):
    push_template = MessageTemplateFactory(project=world.project, channel="push")

    response = create(
        api, world, name="x", template_id=str(push_template.id), audience_id=str(audience.id)
    )

    assert response.status_code == 400
    assert response.json()["error"]["issues"][0] == {
        "code": "wrong_channel",
        "path": "template_id",
        "message": "This is a push template; email campaigns need a email template.",
    }
    assert Campaign.objects.count() == 0


def test_an_email_template_cannot_make_a_push_campaign(api, world, template_id, audience):
    app = push_world(api, world).app

    response = create(
        api,
        world,
        path="/push-campaigns",
        name="x",
        template_id=template_id,
        audience_id=str(audience.id),
        app_id=str(app.id),
    )

    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["code"] == "wrong_channel"


def test_a_push_campaign_needs_its_app(api, world, audience):
    template = MessageTemplateFactory(project=world.project, channel="push")

    response = create(
        api,
        world,
        path="/push-campaigns",
        name="x",
        template_id=str(template.id),
        audience_id=str(audience.id),
    )

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["app_id"])


def test_a_push_campaign_names_its_app_by_id_or_public_id(api, world, audience):
    template = MessageTemplateFactory(project=world.project, channel="push")
    app = push_world(api, world).app

    response = create(
        api,
        world,
        path="/push-campaigns",
        name="Flash sale",
        template_id=str(template.id),
        audience_id=str(audience.id),
        app_id=app.public_id,
    )

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert data["channel"] == "push"
    assert data["app_id"] == str(app.id)
    assert data["from"] is None


def test_an_unknown_push_app_is_not_found_at_app_id(api, world, audience):
    template = MessageTemplateFactory(project=world.project, channel="push")

    response = create(
        api,
        world,
        path="/push-campaigns",
        name="x",
        template_id=str(template.id),
        audience_id=str(audience.id),
        app_id="app_unknown",
    )

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["app_id"])


def test_push_campaigns_take_no_sender(api, world, audience):
    template = MessageTemplateFactory(project=world.project, channel="push")
    app = push_world(api, world).app

    response = create(
        api,
        world,
        path="/push-campaigns",
        name="x",
        template_id=str(template.id),
        audience_id=str(audience.id),
        app_id=str(app.id),
        **{"from": "a@example.com"},
    )

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", ["from"])


@pytest.mark.parametrize(
    ("member", "value", "path"),
    [
        ("from", "not an address", "from"),
        ("scheduled_at", "2020-01-01T00:00:00Z", "scheduled_at"),
        ("name", "", "name"),
    ],
)
def test_bad_members_are_refused_at_their_path(
    api, world, template_id, audience, member, value, path
):
    body = {"name": "x", "template_id": template_id, "audience_id": str(audience.id)}
    body[member] = value

    response = create(api, world, **body)

    assert response.status_code == 400
    assert error_of(response) == ("validation_error", [path])
    assert Campaign.objects.count() == 0


def test_a_draft_is_edited_and_naming_a_topic_clears_the_audience(
    api, world, template_id, audience
):
    campaign = draft(api, world, template_id, audience)
    topic = TopicFactory(project=world.project)

    response = api.patch(
        f"/campaigns/{campaign['id']}",
        {"name": "Renamed", "topic_id": str(topic.id), "scheduled_at": "2030-01-01T09:00:00Z"},
        key=world.keys["project"],
    )

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["name"] == "Renamed"
    assert data["topic_id"] == str(topic.id)
    assert data["audience_id"] is None
    assert data["scheduled_at"] == "2030-01-01T09:00:00Z"


def test_an_empty_edit_is_refused(api, world, template_id, audience):
    campaign = draft(api, world, template_id, audience)

    response = api.patch(f"/campaigns/{campaign['id']}", {}, key=world.keys["project"])

    assert response.status_code == 400


# --- transitions ---------------------------------------------------------------------------


def action(api, world, campaign_id, name, *, path="/campaigns", key="project"):
    project = world.project.id if key.startswith("personal") else None
    return api.post(
        f"{path}/{campaign_id}/actions/{name}", {}, key=world.keys[key], project=project
    )


def test_submit_takes_a_draft_to_review_and_withdraw_brings_it_back(
    api, world, template_id, audience, clock, sender
):
    campaign = draft(api, world, template_id, audience)

    submitted = action(api, world, campaign["id"], "submit")

    assert submitted.status_code == 200
    assert submitted.json()["data"]["status"] == "in_review"
    assert submitted.json()["data"]["submitted_at"] == "2026-01-01T12:00:00Z"

    withdrawn = action(api, world, campaign["id"], "withdraw")

    assert withdrawn.status_code == 200
    assert withdrawn.json()["data"]["status"] == "draft"
    assert withdrawn.json()["data"]["submitted_at"] is None


def test_editing_after_submit_is_a_conflict_and_changes_nothing(
    api, world, template_id, audience, sender
):
    campaign = draft(api, world, template_id, audience)
    action(api, world, campaign["id"], "submit")

    response = api.patch(
        f"/campaigns/{campaign['id']}", {"name": "Sneaky"}, key=world.keys["project"]
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert "Withdraw it to draft first" in response.json()["error"]["message"]
    assert Campaign.objects.get(pk=campaign["id"]).name == "Spring sale"


def test_a_draft_with_an_unpublished_template_cannot_be_submitted(api, world, audience, sender):
    template = MessageTemplateFactory(project=world.project)
    TemplateVersionFactory(template=template)
    campaign = draft(api, world, str(template.id), audience)

    response = action(api, world, campaign["id"], "submit")

    assert response.status_code == 409
    assert error_of(response) == ("conflict", ["template_id"])
    assert Campaign.objects.get(pk=campaign["id"]).status == "draft"


def test_an_email_draft_without_any_sender_cannot_be_submitted(api, world, template_id, audience):
    campaign = draft(api, world, template_id, audience)

    response = action(api, world, campaign["id"], "submit")

    assert response.status_code == 409
    assert error_of(response) == ("conflict", ["from"])


CONFLICTS = [
    ("draft", "withdraw"),
    ("draft", "send"),
    ("in_review", "submit"),
    ("in_review", "send"),
    ("approved", "submit"),
    ("approved", "withdraw"),
    ("scheduled", "submit"),
    ("scheduled", "withdraw"),
    ("scheduled", "send"),
    ("sending", "submit"),
    ("sending", "withdraw"),
    ("sending", "send"),
    ("sent", "submit"),
    ("sent", "withdraw"),
    ("sent", "send"),
    ("sent", "cancel"),
    ("canceled", "submit"),
    ("canceled", "withdraw"),
    ("canceled", "send"),
    ("canceled", "cancel"),
]


def in_status(world, status):
    if status in ("scheduled", "sending"):
        return CampaignFactory(project=world.project, approved=True, status=status)
    return CampaignFactory(project=world.project, **({status: True} if status != "draft" else {}))


@pytest.mark.parametrize(("status", "name"), CONFLICTS, ids=[f"{s}-{a}" for s, a in CONFLICTS])
def test_a_transition_the_status_does_not_allow_is_a_conflict_that_changes_nothing(
    api, world, status, name
):
    campaign = in_status(world, status)
    before = Campaign.objects.filter(pk=campaign.pk).values().get()

    response = action(api, world, campaign.id, name)

    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "conflict"
    assert Campaign.objects.filter(pk=campaign.pk).values().get() == before
    assert not CampaignFanout.objects.exists()
    assert not Email.objects.exists()


@pytest.mark.parametrize(
    "status", ["in_review", "approved", "scheduled", "sending", "sent", "canceled"]
)
def test_only_drafts_can_be_edited(api, world, status):
    campaign = in_status(world, status)

    response = api.patch(f"/campaigns/{campaign.id}", {"name": "x"}, key=world.keys["project"])

    assert response.status_code == 409
    campaign.refresh_from_db()
    assert campaign.name != "x"


@pytest.mark.parametrize("status", ["draft", "in_review", "approved", "scheduled", "sending"])
def test_cancel_stops_a_campaign_before_it_is_sent(api, world, status, clock):
    campaign = in_status(world, status)

    response = action(api, world, campaign.id, "cancel")

    assert response.status_code == 202
    data = response.json()["data"]
    assert data["status"] == "canceled"
    assert data["canceled_at"] == "2026-01-01T12:00:00Z"


def test_an_email_campaign_is_not_found_under_push_campaigns_and_the_other_way_round(api, world):
    email = CampaignFactory(project=world.project)
    push_template = MessageTemplateFactory(project=world.project, channel="push")
    push = CampaignFactory(
        project=world.project, channel="push", template=push_template, app_id=world.project.id
    )
    key = world.keys["project"]

    assert api.get(f"/push-campaigns/{email.id}", key=key).status_code == 404
    assert api.get(f"/campaigns/{push.id}", key=key).status_code == 404
    assert api.patch(f"/push-campaigns/{email.id}", {"name": "x"}, key=key).status_code == 404
    assert action(api, world, email.id, "submit", path="/push-campaigns").status_code == 404
    assert action(api, world, push.id, "cancel").status_code == 404
    assert api.delete(f"/campaigns/{push.id}", key=key).status_code == 404
    assert api.get(f"/campaigns/{email.id}", key=key).status_code == 200
    assert api.get(f"/push-campaigns/{push.id}", key=key).status_code == 200
    assert [c["id"] for c in api.get("/campaigns", key=key).json()["data"]] == [str(email.id)]
    assert [c["id"] for c in api.get("/push-campaigns", key=key).json()["data"]] == [str(push.id)]
    email.refresh_from_db()
    assert email.status == "draft"


def test_a_campaign_of_another_project_is_not_found(api, world):
    campaign = CampaignFactory(project=world.other_project)

    assert api.get(f"/campaigns/{campaign.id}", key=world.keys["project"]).status_code == 404
    assert action(api, world, campaign.id, "cancel").status_code == 404


def test_delete_soft_deletes_and_hides_the_campaign(api, world, clock):
    campaign = CampaignFactory(project=world.project)
    key = world.keys["project"]

    response = api.delete(f"/campaigns/{campaign.id}", key=key)

    assert response.status_code == 200
    assert response.json()["data"]["deleted_at"] == "2026-01-01T12:00:00Z"
    assert api.get(f"/campaigns/{campaign.id}", key=key).status_code == 404
    assert api.get("/campaigns", key=key).json()["metadata"]["total"] == 0
    assert Campaign.objects.filter(pk=campaign.pk).exists()


@pytest.mark.parametrize("status", [CampaignStatus.SCHEDULED, CampaignStatus.SENDING])
def test_a_campaign_on_its_way_out_cannot_be_deleted(api, world, status):
    campaign = in_status(world, status)

    response = api.delete(f"/campaigns/{campaign.id}", key=world.keys["project"])

    assert response.status_code == 409
    assert "Cancel it first" in response.json()["error"]["message"]


def test_the_list_pages_and_filters_by_status(api, world):
    CampaignFactory.create_batch(3, project=world.project)
    CampaignFactory(project=world.project, in_review=True)
    key = world.keys["project"]

    first = api.get("/campaigns", {"limit": 2}, key=key).json()
    in_review = api.get("/campaigns", {"status": "in_review"}, key=key).json()

    assert first["metadata"]["total"] == 4
    assert first["metadata"]["has_more"] is True
    assert len(first["data"]) == 2
    assert [c["status"] for c in in_review["data"]] == ["in_review"]
    assert api.get("/campaigns", {"status": "nope"}, key=key).status_code == 400


def test_the_list_costs_the_same_queries_for_any_page_size(
    api, world, django_assert_max_num_queries
):
    CampaignFactory.create_batch(5, project=world.project, sent=True)
    key = world.keys["project"]
    api.get("/campaigns", key=key)

    with django_assert_max_num_queries(12):
        response = api.get("/campaigns", key=key)

    assert len(response.json()["data"]) == 5


# --- keys ----------------------------------------------------------------------------------


def test_a_read_only_key_reads_but_cannot_write(api, world):
    campaign = CampaignFactory(project=world.project)

    assert api.get("/campaigns", key=world.keys["read_only"]).status_code == 200
    assert action(api, world, campaign.id, "submit", key="read_only").status_code == 403
    assert action(api, world, campaign.id, "cancel", key="read_only").status_code == 403


def test_a_sending_key_may_send_an_approved_campaign_but_not_edit_drafts(api, world, sender):
    campaign = CampaignFactory(project=world.project, approved=True)

    assert (
        api.patch(f"/campaigns/{campaign.id}", {"name": "x"}, key=world.keys["sending"])
    ).status_code == 403
    assert action(api, world, campaign.id, "send", key="sending").status_code == 202


def test_personal_keys_cannot_send_directly(api, world):
    campaign = CampaignFactory(project=world.project, approved=True)

    response = action(api, world, campaign.id, "send", key="personal_owner")

    assert response.status_code == 403
    assert "prepare" in response.json()["error"]["message"]
    campaign.refresh_from_db()
    assert campaign.status == "approved"


def test_a_viewer_reads_but_cannot_submit(api, world):
    campaign = CampaignFactory(project=world.project)
    viewer = world.keys["personal_viewer"]

    assert (
        api.get(f"/campaigns/{campaign.id}", key=viewer, project=world.project.id).status_code
        == 200
    )
    assert (
        api.post(
            f"/campaigns/{campaign.id}/actions/submit", {}, key=viewer, project=world.project.id
        ).status_code
        == 403
    )


# --- the prepared send -----------------------------------------------------------------------


def prepare(api, world, campaign_id, *, path="/campaigns", key="personal_owner"):
    return api.post(
        f"{path}/{campaign_id}/actions/send/prepare",
        {},
        key=world.keys[key],
        project=world.project.id,
    )


def execute(api, world, campaign_id, prepared_id, idempotency_key, *, key="personal_owner"):
    return api.post(
        f"/campaigns/{campaign_id}/actions/send/execute",
        {"prepared_action_id": prepared_id, "idempotency_key": idempotency_key},
        key=world.keys[key],
        project=world.project.id,
    )


def test_prepare_shows_what_the_send_would_do(api, world, sender):
    audience = audience_with(world.project, 3)
    campaign = CampaignFactory(project=world.project, audience=audience, approved=True)

    response = prepare(api, world, campaign.id)

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["operation"] == "campaigns.send"
    assert data["effects"] == {
        "recipients": 3,
        "suppressed": 0,
        "channel": "email",
        "template_version_id": str(campaign.template_version_id),
        "scheduled_at": None,
    }
    campaign.refresh_from_db()
    assert campaign.status == "approved"


def test_prepare_shows_a_future_schedule(api, world, sender, clock):
    campaign = CampaignFactory(
        project=world.project,
        approved=True,
        scheduled_at=clock() + dt.timedelta(hours=2),
    )

    effects = prepare(api, world, campaign.id).json()["data"]["effects"]

    assert effects["scheduled_at"] == "2026-01-01T14:00:00Z"


@pytest.mark.parametrize("status", ["draft", "in_review"])
def test_an_unapproved_campaign_cannot_be_prepared(api, world, status):
    traits = {status: True} if status != "draft" else {}
    campaign = CampaignFactory(project=world.project, **traits)

    response = prepare(api, world, campaign.id)

    assert response.status_code == 409


def test_execute_sends_once_per_idempotency_key(api, world, sender):
    campaign = CampaignFactory(project=world.project, approved=True)
    prepared_id = prepare(api, world, campaign.id).json()["data"]["prepared_action_id"]

    first = execute(api, world, campaign.id, prepared_id, "k-1")
    again = execute(api, world, campaign.id, prepared_id, "k-1")
    other = execute(api, world, campaign.id, prepared_id, "k-2")

    assert first.status_code == 202, first.content
    assert first.json()["data"]["status"] == "sending"
    assert again.status_code == 202
    assert again.json() == first.json()
    assert other.status_code == 409
    assert CampaignFanout.objects.filter(campaign=campaign).count() == 1


def test_a_prepared_send_of_an_email_campaign_is_not_found_under_push_campaigns(api, world):
    campaign = CampaignFactory(project=world.project, approved=True)

    response = prepare(api, world, campaign.id, path="/push-campaigns")

    assert response.status_code == 404


def test_personal_keys_may_not_prepare_without_the_messaging_rollout(api, world):
    world.team.messaging_rollout = False
    world.team.save()
    campaign = CampaignFactory(project=world.project, approved=True)

    assert prepare(api, world, campaign.id).status_code == 403


def test_the_send_operation_needs_the_send_scope():
    assert SEND_SCOPE == Scope.MESSAGES_SEND
    operation = operation_get("campaigns.send")
    assert operation is not None
    assert operation.scope == Scope.MESSAGES_SEND
