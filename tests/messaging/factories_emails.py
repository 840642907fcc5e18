"""Factories for emails and captured messages."""

import datetime as dt

import factory
from django.core.mail import EmailMultiAlternatives
from factory.django import DjangoModelFactory

from messaging.models import CapturedMessage, Email, EmailStatus
from tests.factories import ProjectFactory


class EmailFactory(DjangoModelFactory):
    """A queued inline email; `sent=True` as after SMTP acceptance."""

    class Meta:
        model = Email

    project = factory.SubFactory(ProjectFactory)
    from_email = "Team <team@example.com>"
    to = factory.Sequence(lambda n: [f"user{n}@example.net"])
    recipients = factory.LazyAttribute(lambda e: list(e.to))
    subject = "Hello"
    html = "<p>Hello</p>"
    message_id = factory.Sequence(lambda n: f"<m{n}@example.com>")

    class Params:
        sent = factory.Trait(
            status=EmailStatus.SENT, sent_at=factory.Faker("date_time", tzinfo=dt.UTC)
        )


def _raw(subject: str) -> bytes:
    message = EmailMultiAlternatives(
        subject=subject, body="Hello", from_email="team@example.com", to=["ada@example.net"]
    )
    message.attach_alternative('<p onclick="x()">Hello "there"</p>', "text/html")
    return message.message().as_bytes()


class CapturedMessageFactory(DjangoModelFactory):
    class Meta:
        model = CapturedMessage

    envelope_from = "team@example.com"
    envelope_to = factory.LazyFunction(lambda: ["ada@example.net"])
    subject = "Hello"
    message_id = "<m@example.com>"
    headers = factory.LazyFunction(lambda: [["Subject", "Hello"], ["X-Email-Id", "x"]])
    raw = factory.LazyAttribute(lambda m: _raw(m.subject))
