"""The email's project, template, version, topic and campaign keys are checked once per
statement by triggers, not per row by foreign keys: an email naming a missing target is
refused, however it is written; a target an email names cannot be deleted behind
Django's back; Django's own deletes (cascade, set null) go through."""

import datetime as dt
import uuid

import pytest
from django.db import IntegrityError, connection, transaction

from config.db.copy import RawJson, copy_insert
from messaging.models import Campaign, Email, MessageTemplate
from tenancy.models import Project
from tests.contacts.topics.factories import TopicFactory
from tests.factories import ProjectFactory
from tests.messaging.factories_campaigns import CampaignFactory
from tests.messaging.factories_emails import EmailFactory
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db


# The columns COPY must name besides the id and the project (no defaults in the table).
REQUIRED = {
    "from_email": "a@example.com",
    "to": RawJson("[]"),
    "recipients": RawJson("[]"),
    "subject": "",
    "tags": RawJson("[]"),
    "data": RawJson("{}"),
    "status": "queued",
    "message_id": "",
    "request_fingerprint": "",
    "created_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
}


def deleted_raw(table: str, pk: uuid.UUID) -> None:
    """Deletes a row by SQL alone (nothing of Django's `on_delete`), then runs the
    deferred checks as a commit would."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])  # noqa: S608
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def checked_now() -> None:
    """Runs the deferred checks now, as a commit would."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@pytest.fixture
def campaign():
    campaign = CampaignFactory()
    campaign.template_version = TemplateVersionFactory(template=campaign.template)
    campaign.save()
    return campaign


def email_of(campaign: Campaign, **fields) -> Email:
    return EmailFactory.build(
        project=campaign.project,
        template=campaign.template,
        template_version=campaign.template_version,
        campaign=campaign,
        **fields,
    )


@pytest.mark.parametrize(
    "column", ["project_id", "template_id", "template_version_id", "topic_id", "campaign_id"]
)
def test_an_email_naming_a_missing_target_is_refused(campaign, column):
    email = email_of(campaign)
    setattr(email, column, uuid.uuid4())

    with pytest.raises(IntegrityError, match=column), transaction.atomic():
        email.save(force_insert=True)


def test_a_bulk_insert_with_one_missing_target_among_many_is_refused(campaign):
    rows = [(uuid.uuid4(), campaign.project_id) for _ in range(5)]
    rows.append((uuid.uuid4(), uuid.uuid4()))

    with pytest.raises(IntegrityError, match="project_id"), transaction.atomic():
        copy_insert(
            Email,
            ("id", "project"),
            rows,
            constants={**REQUIRED, "campaign": campaign.pk},
        )
    assert not Email.objects.exists()


def test_emails_of_existing_targets_are_stored_in_bulk(campaign):
    copy_insert(
        Email,
        ("id", "project"),
        [(uuid.uuid4(), campaign.project_id) for _ in range(5)],
        constants={
            **REQUIRED,
            "campaign": campaign.pk,
            "template": campaign.template_id,
            "template_version": campaign.template_version_id,
        },
    )
    checked_now()
    assert Email.objects.filter(campaign=campaign).count() == 5


def test_an_update_to_a_missing_target_is_refused(campaign):
    email = email_of(campaign)
    email.save()

    with pytest.raises(IntegrityError, match="campaign_id"), transaction.atomic():
        Email.objects.filter(pk=email.pk).update(campaign_id=uuid.uuid4())
    Email.objects.filter(pk=email.pk).update(campaign=None, template=None)
    assert Email.objects.get(pk=email.pk).campaign_id is None


@pytest.mark.parametrize("column", ["project_id", "template_id", "topic_id", "campaign_id"])
def test_a_target_an_email_names_cannot_be_deleted_behind_djangos_back(column):
    # Targets that nothing but the email names, so only its check can object.
    project = ProjectFactory()
    email = EmailFactory.build(project=project)
    if column == "template_id":
        email.template = MessageTemplateFactory(project=project)
    elif column == "topic_id":
        email.topic = TopicFactory(project=project)
    elif column == "campaign_id":
        email.campaign = CampaignFactory(project=project, audience=None)
    email.save()
    table = Email._meta.get_field(column.removesuffix("_id")).related_model._meta.db_table

    with pytest.raises(IntegrityError, match=f'"messaging_email".{column}'):
        deleted_raw(table, getattr(email, column))


def test_djangos_deletes_set_null_and_cascade_as_before(campaign):
    email = email_of(campaign)
    email.save()

    Campaign.objects.filter(pk=campaign.pk).delete()
    MessageTemplate.objects.filter(pk=campaign.template_id).delete()
    checked_now()
    email.refresh_from_db()
    assert (email.campaign_id, email.template_id, email.template_version_id) == (None, None, None)

    Project.objects.filter(pk=campaign.project_id).delete()
    checked_now()
    assert not Email.objects.filter(pk=email.pk).exists()
