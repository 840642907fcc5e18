"""The suppression services and selectors other families call (email sending, webhooks)."""

import pytest
from django.db import transaction

from config.api.errors import ValidationFailed
from messaging.models import Suppression
from messaging.selectors.suppressions import suppressed_among
from messaging.services.suppressions import suppression_add
from tenancy.models import EmailNormalization
from tests.messaging.factories_suppressions import SuppressionFactory

pytestmark = pytest.mark.django_db


def test_suppression_add_creates_once_and_then_returns_the_entry(world):
    entry, created = suppression_add(
        project=world.project, email="Ada@Example.com", reason="bounce"
    )
    again, created_again = suppression_add(
        project=world.project, email="ada@example.com", reason="complaint"
    )

    assert created is True
    assert created_again is False
    assert again.pk == entry.pk
    assert again.reason == "bounce"


def test_suppression_add_inside_a_callers_transaction_survives_a_duplicate(world):
    SuppressionFactory(project=world.project, email="ada@example.com")
    with transaction.atomic():
        _, created = suppression_add(
            project=world.project, email="ada@example.com", reason="complaint"
        )
        # The caller's transaction is still usable after the duplicate.
        assert Suppression.objects.count() == 1

    assert created is False


@pytest.mark.parametrize(
    ("email", "reason", "path"),
    [("nope", "bounce", "email"), ("ada@example.com", "spam", "reason"), (None, "manual", "email")],
)
def test_suppression_add_rejects_a_bad_address_or_reason(world, email, reason, path):
    with pytest.raises(ValidationFailed) as caught:
        suppression_add(project=world.project, email=email, reason=reason)

    assert caught.value.issues[0].path == path
    assert Suppression.objects.count() == 0


def test_suppressed_among_names_the_given_spellings_that_are_suppressed(world):
    SuppressionFactory(project=world.project, email="ada@example.com")
    SuppressionFactory(project=world.project, email="bob@example.com")
    SuppressionFactory(project=world.other_project, email="cy@example.com")

    found = suppressed_among(
        project=world.project,
        emails=["ADA@example.com", "ada@example.com", "cy@example.com", "dee@example.com", "bad"],
    )

    assert found == {"ADA@example.com", "ada@example.com"}


def test_suppressed_among_costs_one_query(world, django_assert_num_queries):
    SuppressionFactory(project=world.project, email="ada@example.com")
    emails = [f"user{i}@example.com" for i in range(200)] + ["ada@example.com"]

    with django_assert_num_queries(1):
        found = suppressed_among(project=world.project, emails=emails)

    assert found == {"ada@example.com"}


def test_suppressed_among_of_nothing_asks_nothing(world, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert suppressed_among(project=world.project, emails=[]) == set()


def test_suppressed_among_follows_the_projects_gmail_policy(world):
    world.project.email_normalization = EmailNormalization.GMAIL
    world.project.save()
    SuppressionFactory(project=world.project, email="jdoe@gmail.com")

    found = suppressed_among(project=world.project, emails=["J.Doe+x@gmail.com"])

    assert found == {"J.Doe+x@gmail.com"}
