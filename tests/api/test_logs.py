"""Logs carry no rows' data: database errors lose PostgreSQL's DETAIL, statements their
literals and parameters, whoever logs them."""

import io
import logging

import pytest
from django.db import connection, transaction
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

import config.urls
from config.observability.diagnostics import DatabaseErrorRedactor
from contacts.models import Contact
from tenancy.api.base import ProjectView
from tests.api.test_envelopes import assert_error
from tests.contacts.factories import ContactFactory

pytestmark = pytest.mark.django_db

PERSONAL = ("ada@example.com", "Ada Lovelace")


class InsertsABrokenContact(ProjectView):
    """Fails in the database with a message that quotes the row (a NOT NULL violation's
    DETAIL carries the whole failing row)."""

    def post(self, request: Request) -> Response:
        with transaction.atomic():
            Contact.objects.create(
                project_id=None, email=PERSONAL[0], fields={"nickname": PERSONAL[1]}
            )
        return Response(status=201)


urlpatterns = [
    path("tests/broken-insert", InsertsABrokenContact.as_view()),
    *config.urls.urlpatterns,
]


@pytest.fixture
def console():
    """What the configured console handler writes, with its filters, during the test."""
    handler = next(
        h
        for h in logging.getLogger().handlers
        if any(isinstance(f, DatabaseErrorRedactor) for f in h.filters)
    )
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


@pytest.mark.urls(__name__)
def test_a_logged_database_error_keeps_no_personal_data(api, world, console):
    response = api.post("/tests/broken-insert", {}, key=world.keys["project"])

    assert_error(response, 500, "internal_error")
    logged = console.getvalue()
    assert "Unhandled error in InsertsABrokenContact" in logged
    assert "NotNullViolation" in logged or "not-null" in logged
    assert "SQLSTATE 23502" in logged
    for secret in (*PERSONAL, "DETAIL", "Failing row"):
        assert secret not in logged


def test_logged_queries_keep_no_parameters_or_literals(world, console):
    logger = logging.getLogger("django.db.backends")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    connection.force_debug_cursor = True
    try:
        list(Contact.objects.filter(email=PERSONAL[0]))
    finally:
        connection.force_debug_cursor = False
        logger.setLevel(level)

    logged = console.getvalue()
    assert "contacts_contact" in logged
    assert PERSONAL[0] not in logged


def test_an_error_logged_with_its_message_keeps_no_personal_data(world, console):
    ContactFactory(project=world.project, email=PERSONAL[0])
    try:
        with transaction.atomic():
            Contact.objects.create(project=world.project, email=PERSONAL[0])
    except Exception as error:
        logging.getLogger("tests").error("Upsert failed: %s", error)

    logged = console.getvalue()
    assert "Upsert failed" in logged
    assert "SQLSTATE 23505" in logged
    assert PERSONAL[0] not in logged
