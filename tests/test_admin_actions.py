"""Every action of every admin the console serves needs more than view permission.

These tests walk `admin.site`'s registry rather than a list of known actions, so an action
added later (ours or a third-party admin's) is held to the same rule without a new test.
"""

import datetime as dt
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission as AuthPermission
from django.db.models import Model
from django.test import RequestFactory
from django.urls import reverse
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from events.models import Event, EventStatus
from tests.contacts.factories import ContactFactory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def registered() -> list[tuple[type[Model], admin.ModelAdmin]]:
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def base_actions(model_admin: admin.ModelAdmin) -> list[tuple[str, Any]]:
    """Every action the admin has before permissions filter them: the site's and its own."""
    return [(name, func) for func, name, _ in model_admin._get_base_actions()]


@pytest.fixture
def viewer() -> Any:
    """A staff user who holds every `view_*` permission and nothing else."""
    user = UserFactory(username="viewer@example.com", is_staff=True)
    user.user_permissions.set(AuthPermission.objects.filter(codename__startswith="view_"))
    return user


@pytest.fixture
def rows(world: Any) -> None:
    """At least one row behind each action: keys (world), contacts, a dead-lettered event
    and a beat task."""
    ContactFactory(project=world.project)
    Event.objects.create(
        project=world.project,
        event="order.completed",
        email="dl@example.com",
        occurred_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status=EventStatus.DEAD_LETTERED,
        attempts=8,
        error_code="contact_not_found",
        last_error="contact_not_found: went wrong",
    )
    every_minute = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.MINUTES)
    PeriodicTask.objects.create(name="sweep", task="events.sweep", interval=every_minute)


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every model the console serves, as stored."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model, _ in registered()
    }


def test_every_action_declares_a_permission_beyond_view() -> None:
    lax = [
        f"{model._meta.label}.{name}: {getattr(func, 'allowed_permissions', None)}"
        for model, model_admin in registered()
        for name, func in base_actions(model_admin)
        if not set(getattr(func, "allowed_permissions", ())) - {"view"}
    ]
    assert lax == []


def test_the_walk_covers_the_actions_that_change_state() -> None:
    names = {
        (model._meta.label, name)
        for model, model_admin in registered()
        for name, _ in base_actions(model_admin)
    }
    assert {
        ("tenancy.ApiKey", "revoke_keys"),
        ("contacts.Contact", "soft_delete"),
        ("events.DeadLetteredEvent", "requeue"),
        ("django_celery_beat.PeriodicTask", "disable_tasks"),
        ("django_celery_beat.PeriodicTask", "run_tasks"),
    } <= names


def test_staff_who_may_only_view_are_offered_no_action(viewer: Any) -> None:
    request = RequestFactory().get("/admin/")
    request.user = viewer
    offered = {
        model._meta.label: sorted(model_admin.get_actions(request))
        for model, model_admin in registered()
    }
    assert {label: names for label, names in offered.items() if names} == {}


def test_staff_who_may_only_view_change_nothing_by_posting_any_action(
    client: Any, viewer: Any, rows: None
) -> None:
    client.force_login(viewer)
    before = snapshot()
    posted = 0
    for model, model_admin in registered():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        selected = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)]
        for name, _ in base_actions(model_admin):
            response = client.post(url, {"action": name, "_selected_action": selected})
            assert response.status_code in (200, 302, 403), (model._meta.label, name)
            posted += 1
    assert posted >= 5
    assert snapshot() == before


def test_staff_who_may_change_keys_can_revoke_them(client: Any, world: Any) -> None:
    """The same POST works for staff holding the permission: the refusals above are real."""
    user = UserFactory(username="keys@example.com", is_staff=True)
    user.user_permissions.set(
        AuthPermission.objects.filter(codename__in=["view_apikey", "change_apikey"])
    )
    client.force_login(user)
    key = world.project.api_keys.filter(revoked_at__isnull=True).first()
    response = client.post(
        reverse("admin:tenancy_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [str(key.pk)]},
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_staff_who_may_delete_contacts_can_soft_delete_them(client: Any, world: Any) -> None:
    contact = ContactFactory(project=world.project)
    user = UserFactory(username="contacts@example.com", is_staff=True)
    user.user_permissions.set(
        AuthPermission.objects.filter(codename__in=["view_contact", "delete_contact"])
    )
    client.force_login(user)
    response = client.post(
        reverse("admin:contacts_contact_changelist"),
        {"action": "soft_delete", "_selected_action": [str(contact.pk)]},
    )
    assert response.status_code == 302
    contact.refresh_from_db()
    assert contact.deleted_at is not None


def test_staff_who_may_change_periodic_tasks_can_disable_them(client: Any, rows: None) -> None:
    user = UserFactory(username="ops@example.com", is_staff=True)
    user.user_permissions.set(
        AuthPermission.objects.filter(codename__in=["view_periodictask", "change_periodictask"])
    )
    client.force_login(user)
    task = PeriodicTask.objects.get(name="sweep")
    response = client.post(
        reverse("admin:django_celery_beat_periodictask_changelist"),
        {"action": "disable_tasks", "_selected_action": [str(task.pk)]},
    )
    assert response.status_code == 302
    task.refresh_from_db()
    assert task.enabled is False
