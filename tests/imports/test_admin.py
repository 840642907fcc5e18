"""Imports in the staff console: counts, progress and the preview's sample; chunks that ran
out of attempts can be requeued by staff who may change them."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from imports.models import Import
from tests.factories import UserFactory
from tests.imports.conftest import csv_text, drain
from tests.imports.factories import ImportChunkFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = UserFactory(username="staff@example.com", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def test_an_import_page_shows_counts_progress_and_the_sample(staff, imports, world):
    data = imports.uploaded(
        csv_text("Email,First name", "ada@example.com,Ada", "nope,Nobody"),
        {"Email": "email", "First name": "fields.first_name"},
    )
    preview = imports.previewed(data["id"])
    imports.commit(data["id"], preview["prepared_action_id"])
    drain()

    listing = staff.get(reverse("admin:imports_import_changelist"))
    page = staff.get(reverse("admin:imports_import_change", args=[data["id"]]))

    assert listing.status_code == 200
    assert "1 of 1 rows (100%)" in listing.content.decode()
    html = page.content.decode()
    assert page.status_code == 200
    assert "invalid_email" in html
    assert "ada@example.com" in html
    assert "contacts_created" in html
    assert "1 of 1 rows (100%)" in html


def test_staff_who_may_change_chunks_requeue_a_failed_one(client, world):
    chunk = ImportChunkFactory(
        import_record__project=world.project, import_record__status="failed", dead=True
    )
    user = UserFactory(username="operator@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="imports",
            codename__in=["view_importchunk", "change_importchunk"],
        )
    )
    client.force_login(user)

    response = client.post(
        reverse("admin:imports_importchunk_changelist"),
        {"action": "requeue", "_selected_action": [str(chunk.pk)]},
    )

    assert response.status_code == 302
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == ("accepted", 0)
    assert Import.objects.get(pk=chunk.import_record_id).status == "committing"
