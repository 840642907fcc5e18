"""Emails made together (EmailBatch, email_send_many): checked and rendered one by one as
email_send does, stored in as many statements for 30 as for 3, suppression looked up once
per batch."""

import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.api.errors import Conflict, ValidationFailed
from messaging.models import Email, EmailDelivery, EmailStatus
from messaging.services.email_batch import EmailBatch, email_send_many
from messaging.services.emails import EmailRequest
from tenancy.errors import PlanLimitExceeded
from tenancy.services import team_plan_set
from tests.contacts.factories import ContactFactory
from tests.factories import PlanFactory
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


def ours(captured: CaptureQueriesContext) -> list[str]:
    """The statements of the batch, without the plan's terms (read once per process for
    the quota check, then cached)."""
    return [q["sql"] for q in captured.captured_queries if "tenancy_" not in q["sql"]]


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
        counts[size] = len(ours(captured))
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


def test_a_batch_reads_each_template_and_the_suppression_list_once_and_loaded_contacts_never(
    world, template
):
    contacts = [ContactFactory(project=world.project) for _ in range(5)]
    batch = EmailBatch(likely=lambda: [(world.project, [c.email for c in contacts])])
    with CaptureQueriesContext(connection) as captured:
        for request, contact in zip(requests(template, contacts), contacts, strict=True):
            batch.add(project=world.project, request=request, contact=contact)
    # The suppression list for the likely addresses, the template and its published version.
    assert len(ours(captured)) == 3
    with transaction.atomic():
        stored = batch.store()
    assert len(stored) == 5
    assert len(batch) == 0
    assert Email.objects.count() == 5


def test_an_email_to_a_suppressed_address_is_not_refused_by_a_full_quota(world, template):
    team_plan_set(team=world.team, plan=PlanFactory(emails_sent_per_month=1))
    contacts = [ContactFactory(project=world.project) for _ in range(3)]
    SuppressionFactory(project=world.project, email=contacts[0].email)
    batch = EmailBatch()
    first, second, third = requests(template, contacts)
    assert batch.add(project=world.project, request=first).status == EmailStatus.SUPPRESSED
    assert batch.add(project=world.project, request=second).status == EmailStatus.QUEUED
    with pytest.raises(PlanLimitExceeded):
        batch.add(project=world.project, request=third)
    batch.release()  # gives the second one's count back
    assert batch.add(project=world.project, request=third).status == EmailStatus.QUEUED


def test_a_batch_builds_each_email_as_the_model_constructor_does(world, template):
    from messaging.services.emails import NEW_EMAIL, _addressed, _rendered

    contact = ContactFactory(project=world.project, email="a@example.com")
    request = EmailRequest(to=[], template_id=template.id, contact_id=contact.id, data={"x": 1})
    fields = {
        **_rendered(project=world.project, request=request, contact=contact),
        **_addressed(["a@example.com"], set()),
        "request_fingerprint": "",
    }
    fresh, made = NEW_EMAIL.make(**fields), Email(**fields)
    # Made per instance by their callable defaults (and `created_at` set when stored).
    fresh.id, fresh.created_at = made.id, made.created_at
    for field in Email._meta.concrete_fields:
        assert getattr(fresh, field.attname) == getattr(made, field.attname), field.name
    assert fresh._state.adding
    assert made._state.adding
    # `_state.db` (the routers' pick, set from a related instance) is set when stored.
    assert fresh._state.fields_cache == made._state.fields_cache
