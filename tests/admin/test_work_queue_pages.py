"""Every work-queue table's console page: a dead-lettered row's change page opens with
its requeue button, and the button requeues it, whatever the type of the table's key
(UUIDs for events and deliveries, integers for import chunks and fan-out batches)."""

import uuid

import pytest
from django.contrib import admin
from django.urls import resolve, reverse

from config.workqueue.admin import WorkQueueAdmin
from config.workqueue.models import WorkStatus
from messaging.models import CampaignFanout, CampaignStatus
from tests.admin.test_action_permissions import console_rows  # noqa: F401 (a fixture)
from tests.factories import UserFactory
from tests.imports.factories import ImportChunkFactory
from tests.messaging.factories_campaigns import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = UserFactory(username="operator@example.com", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def work_queue_admins() -> list[WorkQueueAdmin]:
    return [
        model_admin
        for model_admin in admin.site._registry.values()
        if isinstance(model_admin, WorkQueueAdmin)
    ]


def test_every_work_queue_page_has_a_requeue_address_for_its_own_kind_of_key():
    found = work_queue_admins()
    assert len(found) >= 6
    for model_admin in found:
        meta = model_admin.model._meta
        example = (
            7 if meta.pk.get_internal_type() in {"BigAutoField", "AutoField"} else uuid.uuid4()
        )
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_requeue", args=[example])
        assert resolve(url).func.__name__ == "requeue_view", url


def dead_lettered_rows(world):
    chunk = ImportChunkFactory(
        import_record__project=world.project, import_record__status="failed", dead=True
    )
    fanout = CampaignFanout.objects.create(
        # Only a campaign still sending has its batches requeued.
        campaign=CampaignFactory(project=world.project, status=CampaignStatus.SENDING),
        position=1,
        status=WorkStatus.DEAD_LETTERED,
        attempts=5,
        last_error="the database refused the batch",
    )
    return [chunk, fanout]


def test_a_dead_lettered_row_with_an_integer_key_opens_and_is_requeued_from_its_page(staff, world):
    for row in dead_lettered_rows(world):
        meta = row._meta
        page = staff.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk]))
        assert page.status_code == 200, meta.model_name
        html = page.content.decode()
        assert 'name="_requeue"' in html
        # Nothing on the page can be edited, so nothing offers to save it.
        assert 'name="_save"' not in html
        assert 'name="_continue"' not in html

        requeued = staff.post(
            reverse(f"admin:{meta.app_label}_{meta.model_name}_requeue", args=[row.pk])
        )

        assert requeued.status_code == 302
        row.refresh_from_db()
        assert row.status == WorkStatus.ACCEPTED, meta.model_name


def test_a_requeue_address_whose_key_is_not_of_the_tables_kind_is_sent_to_the_index(staff):
    for name in (
        "admin:imports_importchunk_changelist",
        "admin:events_deadletteredevent_changelist",
    ):
        response = staff.post(reverse(name) + "not-a-key/requeue/", follow=True)
        # As the admin's own pages answer an unknown object: back to the index, with a note.
        assert response.redirect_chain[-1][0] == reverse("admin:index")
        assert "does not exist" in response.content.decode()


@pytest.mark.usefixtures("console_rows")
def test_the_page_of_a_dead_lettered_row_of_every_queue_opens(staff):
    opened = []
    for model_admin in work_queue_admins():
        model = model_admin.model
        row = model_admin.get_queryset(None).filter(status=WorkStatus.DEAD_LETTERED).first()
        assert row is not None, f"no dead-lettered {model._meta.label} to open"
        meta = model._meta
        page = staff.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk]))
        assert page.status_code == 200, meta.label
        assert 'name="_requeue"' in page.content.decode(), meta.label
        opened.append(meta.label)
    assert len(opened) == len(work_queue_admins())
