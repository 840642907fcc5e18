"""Emails made together (EmailBatch, email_send_many): checked and rendered one by one as
email_send does, stored in as many statements for 30 as for 3, suppression looked up once
per batch."""

import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.api.errors import Conflict, ValidationFailed
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.services.emails import EmailBatch, EmailRequest, email_send_many
from tests.contacts.factories import ContactFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.factories_templates import TemplateVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def template(world):
    version = TemplateVersionFactory(
        template__project=world.project,
        template__from_email="Shop <shop@example.com>",
        published=True,
        subject="Hi {{ contact.fields.first_name }}",
        text="Order {{ data.order }}",
    )
    return version.template


def requests(template, contacts):
    return [
        EmailRequest(to=[], contact_id=contact.id, template_id=template.id, data={"order": n})
        for n, contact in enumerate(contacts)
    ]


def test_many_emails_are_stored_in_as_many_statements_for_30_as_for_3(world, template):
    counts = {}
    for size in (3, 30):
        contacts = [
            ContactFactory(project=world.project, fields={"first_name": f"P{n}"})
            for n in range(size)
        ]
        with CaptureQueriesContext(connection) as captured:
            emails = email_send_many(project=world.project, requests=requests(template, contacts))
        counts[size] = len(captured.captured_queries)
        assert [email.to for email in emails] == [[contact.email] for contact in contacts]
    assert counts[3] == counts[30], counts
    stored = Email.objects.get(to=[contacts[7].email])
    assert (stored.subject, stored.text, stored.status) == ("Hi P7", "Order 7", "queued")
    assert (stored.template_id, stored.contact_id) == (template.id, contacts[7].id)
    assert stored.from_email == "Shop <shop@example.com>"
    assert stored.message_id.endswith("@example.com>")
    assert EmailDelivery.objects.count() == Email.objects.count() == 33


def test_a_suppressed_address_is_stored_suppressed_without_a_delivery(world, template):
    contacts = [ContactFactory(project=world.project) for _ in range(3)]
    SuppressionFactory(project=world.project, email=contacts[1].email)
    emails = email_send_many(project=world.project, requests=requests(template, contacts))
    assert [(email.status, email.recipients) for email in emails] == [
        (EmailStatus.QUEUED, [contacts[0].email]),
        (EmailStatus.SUPPRESSED, []),
        (EmailStatus.QUEUED, [contacts[2].email]),
    ]
    assert set(EmailDelivery.objects.values_list("email_id", flat=True)) == {
        emails[0].id,
        emails[2].id,
    }


def test_a_request_that_cannot_be_sent_raises_when_added_and_nothing_is_stored(world, template):
    draft_only = TemplateVersionFactory(template__project=world.project).template
    contact = ContactFactory(project=world.project)
    batch = EmailBatch()
    batch.add(project=world.project, request=requests(template, [contact])[0])
    with pytest.raises(Conflict):
        batch.add(project=world.project, request=requests(draft_only, [contact])[0])
    with pytest.raises(ValidationFailed):
        batch.add(project=world.project, request=EmailRequest(to=["not an address"], text="x"))
    assert len(batch) == 1
    with pytest.raises(ValidationFailed), transaction.atomic():
        email_send_many(
            project=world.project,
            requests=[*requests(template, [contact]), EmailRequest(to=[], subject="no body")],
        )
    with pytest.raises(ValidationFailed):
        email_send_many(
            project=world.project,
            requests=[EmailRequest(to=[], contact_id=uuid.uuid4(), template_id=template.id)],
        )
    assert not Email.objects.exists()


def test_each_template_is_read_once_per_batch_and_a_loaded_contact_not_at_all(world, template):
    contacts = [ContactFactory(project=world.project) for _ in range(5)]
    batch = EmailBatch()
    with CaptureQueriesContext(connection) as captured:
        for request, contact in zip(requests(template, contacts), contacts, strict=True):
            batch.add(project=world.project, request=request, contact=contact)
    # The template and its published version.
    assert len(captured.captured_queries) == 2
    with transaction.atomic():
        stored = batch.store()
    assert len(stored) == 5
    assert len(batch) == 0
    assert Email.objects.count() == 5
