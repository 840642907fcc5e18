"""The import and campaign tools: an import uploaded, previewed and committed, and an
approved campaign prepared and sent, all through prepare then `prepared_action_execute`."""

import uuid

import pytest

from contacts.models import Contact
from imports.models import Import
from messaging.api.tools import campaign_send_path
from messaging.models.campaigns import Campaign, CampaignStatus
from messaging.models.templates import Channel
from tests.agent.conftest import data, error
from tests.imports.conftest import drain
from tests.messaging.factories_campaigns import CampaignFactory, audience_with
from tests.messaging.factories_templates import MessageTemplateFactory
from tests.pushproviders.factories import PushAppFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_import_is_created_previewed_and_committed_through_the_tools(mcp, world):
    owner = world.keys["personal_owner"]
    p = {"project_id": str(world.project.id)}

    async def work(session):
        created = await session.call_tool(
            "imports_create",
            {
                **p,
                "rows": [
                    {"Email": "ada@example.com", "Name": "Ada"},
                    {"Email": "not-an-address", "Name": "Bob"},
                ],
                "mapping": {"Email": "email", "Name": "fields.name"},
            },
        )
        import_id = data(created)["id"]
        preview = await session.call_tool("import_preview", {**p, "import_id": import_id})
        executed = await session.call_tool(
            "prepared_action_execute",
            {
                **p,
                "prepared_action_id": data(preview)["prepared_action_id"],
                "idempotency_key": "import-1",
            },
        )
        return import_id, preview, executed

    import_id, preview, executed = mcp.run(owner, work)

    assert data(preview)["operation"] == "imports.commit"
    counts = {count["status"]: count["rows"] for count in data(preview)["counts"]}
    assert counts == {"valid": 1, "invalid": 1}
    assert data(executed)["id"] == import_id
    assert data(executed)["status"] in ("committing", "committed")
    drain()
    assert Import.objects.get(id=import_id).status == "committed"
    contact = Contact.objects.get(project=world.project, email="ada@example.com")
    assert contact.fields == {"name": "Ada"}


def test_a_campaign_is_listed_created_prepared_and_sent_through_the_tools(mcp, world):
    world.project.default_from = "Shop <shop@example.com>"
    world.project.save()
    owner = world.keys["personal_owner"]
    p = {"project_id": str(world.project.id)}
    audience = audience_with(world.project, 3)
    approved = CampaignFactory(project=world.project, audience=audience, approved=True)
    template = MessageTemplateFactory(project=world.project, channel="email")

    async def work(session):
        listed = await session.call_tool("campaigns_list", p)
        created = await session.call_tool(
            "campaigns_create",
            {
                **p,
                "name": "Spring",
                "template_id": str(approved.template_id),
                "audience_id": str(audience.id),
            },
        )
        wrong = await session.call_tool(
            "campaigns_create",
            {**p, "name": "Bad", "template_id": str(uuid.uuid4()), "audience_id": str(audience.id)},
        )
        prepared = await session.call_tool(
            "campaign_send_prepare", {**p, "campaign_id": str(approved.id)}
        )
        sent = await session.call_tool(
            "prepared_action_execute",
            {
                **p,
                "prepared_action_id": data(prepared)["prepared_action_id"],
                "idempotency_key": "send-1",
            },
        )
        return listed, created, wrong, prepared, sent

    listed, created, wrong, prepared, sent = mcp.run(owner, work)

    assert [c["id"] for c in data(listed)["items"]] == [str(approved.id)]
    assert data(created)["status"] == "draft"
    assert error(wrong)["issues"][0]["path"] == "template_id"
    assert data(prepared)["effects"]["recipients"] == 3
    assert data(sent)["id"] == str(approved.id)
    assert Campaign.objects.get(id=approved.id).status in (
        CampaignStatus.SENDING,
        CampaignStatus.SENT,
    )
    assert template.channel == Channel.EMAIL


def test_the_send_of_a_push_campaign_executes_under_push_campaigns(world):
    app = PushAppFactory(project=world.project)
    push = CampaignFactory(
        project=world.project,
        channel=Channel.PUSH,
        app_id=app.id,
        from_email=None,
        template=MessageTemplateFactory(project=world.project, channel="push"),
    )
    email = CampaignFactory(project=world.project)

    assert campaign_send_path(project=world.project, resource_id=str(push.id)) == (
        f"/push-campaigns/{push.id}/actions/send/execute"
    )
    assert campaign_send_path(project=world.project, resource_id=str(email.id)) == (
        f"/campaigns/{email.id}/actions/send/execute"
    )
