"""Every action of every admin on the site needs more than view, including actions added later.

The tests walk `admin.site`'s registry instead of a list, so a new admin or action is
checked the day it is registered.
"""

import datetime as dt
import uuid
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.models import Session
from django.db.models import Model
from django.test import Client, RequestFactory
from django.urls import reverse
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from agent.models import ToolCall
from automations.models import RunJob
from events.models import Event, EventStatus, EventType
from messaging.models import CampaignFanout, EmailDelivery
from tenancy.models import UsageDay
from tests.automations.factories import (
    AutomationFactory,
    AutomationRunFactory,
    RunStepFactory,
    RunWaitFactory,
)
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import SubscriptionFactory
from tests.factories import PlanFactory, UserFactory
from tests.imports.factories import ImportChunkFactory
from tests.messaging.factories_campaigns import CampaignFactory
from tests.messaging.factories_domains import DomainFactory
from tests.messaging.factories_emails import CapturedMessageFactory, EmailFactory
from tests.messaging.factories_suppressions import SuppressionFactory
from tests.messaging.factories_templates import TemplateVersionFactory
from tests.pushproviders.factories import (
    PushDeliveryFactory,
    PushInstallationFactory,
    PushProviderFactory,
)
from tests.webhooks.factories import WebhookDeliveryFactory

pytestmark = pytest.mark.django_db

REGISTRY = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def declared_actions(modeladmin: admin.ModelAdmin) -> list[tuple[Any, str]]:
    """Every action the admin could offer, the site's and its own, before any filtering."""
    names = [name for name, _ in modeladmin.admin_site.actions]
    names += list(modeladmin.actions or [])
    found = []
    for name in names:
        action = modeladmin.get_action(name)
        assert action is not None, f"{type(modeladmin).__name__} names a missing action {name}"
        func, action_name, _ = action
        found.append((func, action_name))
    return found


ACTIONS = [
    (model, modeladmin, func, name)
    for model, modeladmin in REGISTRY
    for func, name in declared_actions(modeladmin)
]


def changelist_url(model: type[Model]) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table but sessions, which a logged-in client writes to."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values())
        for model in apps.get_models()
        if model is not Session
    }


@pytest.fixture
def console_rows(world):
    """At least one row behind every admin of the site."""
    Group.objects.create(name="Support")
    interval = IntervalSchedule.objects.create(every=5, period=IntervalSchedule.SECONDS)
    crontab = CrontabSchedule.objects.create(minute="0", hour="3")
    SolarSchedule.objects.create(event="sunrise", latitude=48.85, longitude=2.35)
    ClockedSchedule.objects.create(clocked_time=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))
    PeriodicTask.objects.create(name="events.sweep", task="events.sweep", interval=interval)
    PeriodicTask.objects.create(
        name="events.purge_expired", task="events.purge_expired", crontab=crontab, enabled=False
    )
    contact = ContactFactory(project=world.project)
    AudienceMembershipFactory(audience__project=world.project, contact=contact)
    SubscriptionFactory(topic__project=world.project, contact=contact)
    occurred = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for status in (EventStatus.PROCESSED, EventStatus.DEAD_LETTERED):
        Event.objects.create(
            project=world.project,
            event="order.completed",
            email=contact.email,
            occurred_at=occurred,
            status=status,
            attempts=8,
            error_code="contact_not_found" if status == EventStatus.DEAD_LETTERED else "",
        )
    EventType.objects.create(
        project=world.project,
        event="order.completed",
        source="customer",
        first_seen_at=occurred,
        last_seen_at=occurred,
        occurrences_count=2,
    )
    TemplateVersionFactory(template__project=world.project)
    SuppressionFactory(project=world.project)
    DomainFactory(project=world.project)
    email = EmailFactory(project=world.project)
    EmailDelivery.objects.create(email=email, next_attempt_at=occurred)
    failed = EmailFactory(project=world.project, status="failed")
    EmailDelivery.objects.create(
        email=failed, status="dead_lettered", attempts=8, error_code="smtp_550"
    )
    CapturedMessageFactory(email=email)
    provider = PushProviderFactory(app__project=world.project)
    PushInstallationFactory(app=provider.app, contact=contact)
    automation = AutomationFactory(project=world.project, published=True)
    run = AutomationRunFactory(automation=automation, contact=contact, waiting=True)
    RunStepFactory(run=run, email=email)
    RunWaitFactory(run=run)
    PushDeliveryFactory(message__app=provider.app, installation__contact=contact, dead=True)
    RunJob.objects.create(run=run, status="dead_lettered", last_error="Deadlock", attempts=8)
    ImportChunkFactory(import_record__project=world.project, dead=True)
    CampaignFactory(project=world.project, in_review=True)
    world.team.plan = PlanFactory(events_ingested_per_month=1000)
    world.team.save()
    UsageDay.objects.create(project=world.project, date=occurred.date(), events_ingested=3)
    ToolCall.objects.create(
        api_key_id=uuid.uuid4(),
        user_id=world.users["owner"].id,
        project_id=world.project.id,
        tool="contacts_get",
        outcome="ok",
        status=200,
        duration_ms=3.5,
        created_at=occurred,
    )
    sending = CampaignFactory(project=world.project, approved=True, status="sending")
    CampaignFanout.objects.create(
        campaign=sending,
        position=0,
        status="dead_lettered",
        attempts=10,
        next_attempt_at=occurred,
        last_error="Deadlock",
    )
    WebhookDeliveryFactory(endpoint__project=world.project, dead=True)
    return world


@pytest.fixture
def view_only_staff(client: Client) -> Any:
    """A staff user holding the view permission of every model and nothing else."""
    user = UserFactory(username="looks-only@example.com", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client.force_login(user)
    return user


def as_request(user: Any) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


@pytest.mark.parametrize(
    ("model", "modeladmin", "func", "name"),
    ACTIONS,
    ids=[f"{model._meta.label}.{name}" for model, _, _, name in ACTIONS],
)
def test_every_action_needs_more_than_view(model, modeladmin, func, name):
    required = set(getattr(func, "allowed_permissions", ()))
    assert required - {"view"}, f"{name} on {model._meta.label} must declare change or delete"
    for permission in required:
        assert callable(getattr(modeladmin, f"has_{permission}_permission", None))


@pytest.mark.parametrize(
    ("model", "modeladmin"), REGISTRY, ids=[model._meta.label for model, _ in REGISTRY]
)
def test_staff_who_may_only_view_are_refused_every_action(
    client, console_rows, view_only_staff, model, modeladmin
):
    request = as_request(view_only_staff)
    assert modeladmin.get_actions(request) == {}
    url = changelist_url(model)
    assert client.get(url).status_code == 200
    selected = [str(pk) for pk in modeladmin.get_queryset(request).values_list("pk", flat=True)]
    assert selected, f"console_rows must create a {model._meta.label} row"
    before = snapshot()
    statuses = {}
    for _, name in declared_actions(modeladmin):
        # "post" confirms the actions that ask first, such as delete_selected.
        form = {"action": name, ACTION_CHECKBOX_NAME: selected, "post": "yes"}
        statuses[name] = client.post(url, form).status_code
        assert snapshot() == before, f"{name} on {model._meta.label} changed rows"
    # The changelist answers as to a plain page view: it had no action to run.
    assert set(statuses.values()) <= {200}, statuses


def test_the_walk_sees_the_actions_that_once_needed_only_view():
    walked = {(model._meta.label, name) for model, _, _, name in ACTIONS}
    assert {
        ("tenancy.ApiKey", "revoke_keys"),
        ("contacts.Contact", "soft_delete"),
        ("events.DeadLetteredEvent", "requeue"),
        ("messaging.DeadLetteredEmailDelivery", "requeue"),
        ("messaging.Campaign", "approve"),
        ("messaging.Campaign", "reject"),
        ("messaging.CampaignAwaitingReview", "approve"),
        ("messaging.CampaignAwaitingReview", "reject"),
        ("messaging.CampaignFanout", "requeue"),
        ("pushproviders.PushDelivery", "requeue"),
        ("imports.ImportChunk", "requeue"),
        ("automations.AutomationRun", "cancel_runs"),
        ("django_celery_beat.PeriodicTask", "enable_tasks"),
        ("django_celery_beat.PeriodicTask", "disable_tasks"),
        ("django_celery_beat.PeriodicTask", "toggle_tasks"),
        ("django_celery_beat.PeriodicTask", "run_tasks"),
        ("auth.User", "delete_selected"),
    } <= walked


def test_staff_who_may_change_periodic_tasks_can_still_disable_them(client, console_rows):
    user = UserFactory(username="operator@example.com", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_celery_beat",
            codename__in=["view_periodictask", "change_periodictask"],
        )
    )
    client.force_login(user)
    sweep = PeriodicTask.objects.get(name="events.sweep")

    response = client.post(
        changelist_url(PeriodicTask),
        {"action": "disable_tasks", ACTION_CHECKBOX_NAME: [str(sweep.pk)]},
    )

    assert response.status_code == 302
    sweep.refresh_from_db()
    assert sweep.enabled is False
