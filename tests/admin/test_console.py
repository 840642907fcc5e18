"""The staff console: titled as the product, its dashboard, a project filter and search on
every list, a contact's timeline (paged, newest first, one page costing the same queries
whatever the history), cancelling a run from it, and lists whose query count does not
grow with their rows."""

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agent.models import ToolCall
from automations.models import ExecutionMode, RunStatus
from config.console.site import ProjectFilter, project_path
from config.registries.console import (
    DashboardRow,
    DashboardSection,
    register_dashboard_section,
    unregister_dashboard_section,
)
from contacts.models import Contact
from events.models import Event, EventStatus
from tests.automations.factories import AutomationFactory, AutomationRunFactory, RunStepFactory
from tests.contacts.audiences.factories import AudienceMembershipFactory
from tests.contacts.factories import ContactFactory
from tests.contacts.topics.factories import SubscriptionFactory
from tests.factories import UserFactory
from tests.messaging.factories_campaigns import CampaignFactory
from tests.messaging.factories_emails import EmailFactory
from tests.pushproviders.factories import PushDeliveryFactory, PushInstallationFactory

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def changelist(model: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def contact_page(contact: Contact, **params: str) -> str:
    url = reverse("admin:contacts_contact_change", args=[contact.pk])
    if params:
        url += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return url


# --- the site and its dashboard -----------------------------------------------------------


def test_the_console_is_titled_as_the_product(admin_client):
    page = admin_client.get("/admin/").content.decode()

    assert "Sendrealm staff console" in page
    assert "<title>Operations | Sendrealm console</title>" in page


def test_the_dashboard_shows_queues_dead_letters_and_recent_failures(admin_client, world):
    for status in (EventStatus.ACCEPTED, EventStatus.ACCEPTED, EventStatus.DEAD_LETTERED):
        Event.objects.create(
            project=world.project,
            event="order.completed",
            occurred_at=T0,
            status=status,
            next_attempt_at=T0 if status == EventStatus.ACCEPTED else None,
            error_code="contact_not_found" if status == EventStatus.DEAD_LETTERED else "",
            last_error="No contact" if status == EventStatus.DEAD_LETTERED else "",
        )

    page = admin_client.get("/admin/").content.decode()

    assert '<tr class="queue" data-queue="events.Event">' in page
    assert '<td class="depth">2</td>' in page
    assert reverse("admin:events_deadletteredevent_changelist") in page
    assert "contact_not_found" in page
    assert 'data-queue="messaging.EmailDelivery"' in page
    assert 'data-queue="pushproviders.PushDelivery"' in page


def test_the_dashboard_lists_the_campaigns_awaiting_review_longest_first(
    admin_client, world, clock
):
    CampaignFactory(project=world.project, name="Spring sale", in_review=True)
    clock.advance(hours=1)
    CampaignFactory(project=world.project, name="Summer sale", in_review=True)
    CampaignFactory(project=world.project, name="Draft only")

    page = admin_client.get("/admin/").content.decode()

    assert "Campaigns awaiting review" in page
    assert page.index("Spring sale") < page.index("Summer sale")
    assert "Draft only" not in page


def test_families_add_sections_to_the_dashboard(admin_client):
    def campaigns(request: Any) -> DashboardSection:
        return DashboardSection(
            title="Campaigns awaiting review",
            rows=[DashboardRow(label="Spring sale", url="/admin/x/", detail="2 h ago")],
        )

    register_dashboard_section(campaigns)
    try:
        page = admin_client.get("/admin/").content.decode()
    finally:
        unregister_dashboard_section(campaigns)

    assert "Campaigns awaiting review" in page
    assert "Spring sale" in page


# --- every list ---------------------------------------------------------------------------


REGISTRY = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)
# celery-beat's schedule tables hold a handful of rows the library manages.
OWN = [(m, a) for m, a in REGISTRY if m._meta.app_label != "django_celery_beat"]
WITH_PROJECT = [(m, a) for m, a in REGISTRY if project_path(m) is not None]


@pytest.mark.parametrize(("model", "modeladmin"), OWN, ids=[m._meta.label for m, _ in OWN])
def test_every_list_is_searchable(model, modeladmin):
    assert modeladmin.search_fields, f"{model._meta.label} has no search"


@pytest.mark.parametrize(
    ("model", "modeladmin"), WITH_PROJECT, ids=[m._meta.label for m, _ in WITH_PROJECT]
)
def test_every_list_of_project_rows_filters_by_project(admin_client, world, model, modeladmin):
    assert any(isinstance(f, type) and issubclass(f, ProjectFilter) for f in modeladmin.list_filter)
    by_id = admin_client.get(changelist(model), {"project": str(world.project.id)})
    by_name = admin_client.get(changelist(model), {"project": "Main", "q": "x"})

    assert by_id.status_code == 200
    assert by_name.status_code == 200
    assert 'placeholder="Project id or name"' in by_id.content.decode()


def test_the_project_filter_keeps_only_that_projects_rows(admin_client, world):
    ContactFactory(project=world.project, email="mine@example.com")
    ContactFactory(project=world.other_project, email="theirs@example.com")

    page = admin_client.get(changelist(Contact), {"project": str(world.project.id)})

    assert "mine@example.com" in page.content.decode()
    assert "theirs@example.com" not in page.content.decode()
    by_name = admin_client.get(changelist(Contact), {"project": "Second"}).content.decode()
    assert "theirs@example.com" in by_name
    assert "mine@example.com" not in by_name


# --- the contact's timeline ---------------------------------------------------------------


def history(world, contact: Contact, clock, *, size: int) -> None:
    """`size` of everything that can happen to a contact, one a minute."""
    automation = AutomationFactory(project=world.project, published=True)
    installation = PushInstallationFactory(contact=contact, app__project=world.project)
    for n in range(size):
        clock.advance(minutes=1)
        Event.objects.create(
            project=world.project,
            contact=contact,
            event=f"step.{n}",
            occurred_at=clock(),
            created_at=clock(),
            status=EventStatus.PROCESSED,
        )
        EmailFactory(project=world.project, contact=contact, subject=f"Mail {n}")
        run = AutomationRunFactory(automation=automation, contact=contact, waiting=True)
        RunStepFactory(run=run)
        RunStepFactory(run=run, step_key="done", type="exit", status="completed")
        PushDeliveryFactory(
            message__app=installation.app, installation=installation, contact=contact
        )
        SubscriptionFactory(topic__project=world.project, contact=contact, changed_at=clock())
        AudienceMembershipFactory(audience__project=world.project, contact=contact)


def test_a_contacts_page_shows_one_timeline_newest_first(admin_client, world, clock):
    contact = ContactFactory(project=world.project)
    history(world, contact, clock, size=2)

    page = admin_client.get(contact_page(contact)).content.decode()

    assert '<div id="timeline" class="module">' in page
    for kind in ("event", "email", "run", "step", "push", "subscription", "membership"):
        assert f'data-kind="{kind}"' in page, kind
    assert page.index("step.1") < page.index("step.0")
    assert page.index("Mail 1") < page.index("Mail 0")
    assert "Cancel run" in page


def test_the_timeline_pages_through_older_entries(admin_client, world, clock, settings):
    contact = ContactFactory(project=world.project)
    history(world, contact, clock, size=6)

    first = admin_client.get(contact_page(contact))
    page = first.content.decode()
    older = first.context["timeline"]

    assert older.next_before is not None
    assert page.count('class="timeline-entry"') == 25
    second = admin_client.get(
        contact_page(
            contact,
            timeline_before=older.next_before.isoformat().replace("+", "%2B"),
            timeline_key=older.next_key,
        )
    )
    entries = second.context["timeline"].entries
    assert entries
    assert all(entry.cursor < older.entries[-1].cursor for entry in entries)
    shown = {(e.kind, e.key) for e in older.entries} | {(e.kind, e.key) for e in entries}
    assert len(shown) == len(older.entries) + len(entries)


def count_queries(call: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200
    return len(queries)


def test_a_timeline_page_costs_the_same_queries_for_a_long_history(
    admin_client, world, clock, django_assert_max_num_queries
):
    short = ContactFactory(project=world.project)
    long = ContactFactory(project=world.project)
    history(world, short, clock, size=1)
    history(world, long, clock, size=8)

    few = count_queries(lambda: admin_client.get(contact_page(short)))

    with django_assert_max_num_queries(few):
        admin_client.get(contact_page(long))


def test_a_run_is_canceled_from_the_timeline(admin_client, world, clock):
    contact = ContactFactory(project=world.project)
    run = AutomationRunFactory(contact=contact, automation__project=world.project, waiting=True)
    page = contact_page(contact)
    cancel = reverse("admin:automations_automationrun_cancel_one", args=[run.pk])
    assert cancel in admin_client.get(page).content.decode()

    response = admin_client.post(cancel, {"next": page})

    assert response.status_code == 302
    assert response["Location"] == page
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELED
    assert run.cancellation_reason == "Canceled from the staff console."
    assert cancel not in admin_client.get(page).content.decode()


def test_staff_who_may_only_view_runs_cannot_cancel_them(client, world, clock):
    user = UserFactory(username="console-viewer@example.com", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client.force_login(user)
    contact = ContactFactory(project=world.project)
    run = AutomationRunFactory(contact=contact, automation__project=world.project, waiting=True)
    cancel = reverse("admin:automations_automationrun_cancel_one", args=[run.pk])

    page = client.get(contact_page(contact))
    assert page.status_code == 200
    assert 'id="timeline"' in page.content.decode()
    assert cancel not in page.content.decode()
    assert client.post(cancel).status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING


# --- no page grows its queries with its rows ----------------------------------------------


def rows_of(world, size: int) -> None:
    for n in range(size):
        contact = ContactFactory(project=world.project)
        Event.objects.create(
            project=world.project,
            contact=contact,
            event="order.completed",
            occurred_at=T0,
            status=EventStatus.DEAD_LETTERED,
            error_code=f"e{n % 3}",
        )
        EmailFactory(project=world.project, contact=contact)
        run = AutomationRunFactory(automation__project=world.project, contact=contact)
        RunStepFactory(run=run)
        PushDeliveryFactory(message__app__project=world.project, dead=True)


PAGES = [
    "admin:contacts_contact_changelist",
    "admin:events_event_changelist",
    "admin:events_deadletteredevent_changelist",
    "admin:messaging_email_changelist",
    "admin:pushproviders_pushdelivery_changelist",
    "admin:automations_automationrun_changelist",
    "admin:tenancy_usageday_changelist",
    "admin:index",
]


@pytest.mark.parametrize("name", PAGES)
def test_a_list_costs_the_same_queries_with_more_rows(
    admin_client, world, name, django_assert_max_num_queries
):
    url = reverse(name)
    rows_of(world, 2)
    few = count_queries(lambda: admin_client.get(url))
    rows_of(world, 20)

    with django_assert_max_num_queries(few):
        assert admin_client.get(url).status_code == 200


def test_a_test_run_is_labelled_on_the_timeline_and_steps_keep_the_runs_order(
    admin_client, world, clock
):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    automation = AutomationFactory(project=world.project, name="Onboarding")
    live = AutomationRunFactory(automation=automation, contact=contact)
    test = AutomationRunFactory(
        automation=automation, contact=contact, execution_mode=ExecutionMode.TEST
    )
    for run in (live, test):
        # Taken in one advance: one start time, the run's order in `sequence`.
        RunStepFactory(run=run, step_key="wait_purchase", sequence=2, started_at=T0)
        RunStepFactory(run=run, step_key="welcome", type="send_email", sequence=1, started_at=T0)

    page = admin_client.get(reverse("admin:contacts_contact_change", args=[contact.pk]))

    html = page.content.decode()
    assert html.count("Onboarding (test run)") == 1
    assert html.count("test run, nothing sent") == 1
    assert html.count(">Onboarding</a>") == 1
    # In each run: welcome, then wait_purchase.
    welcome = [i for i in range(len(html)) if html.startswith("welcome (", i)]
    waits = [i for i in range(len(html)) if html.startswith("wait_purchase (", i)]
    assert len(welcome) == len(waits) == 2
    assert all(w < p for w, p in zip(welcome, waits, strict=True))


def test_console_pages_read_as_words_and_times_to_the_second(admin_client, world, clock):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    AudienceMembershipFactory(
        contact=contact, audience__project=world.project, audience__name="VIP"
    )
    SubscriptionFactory(contact=contact, topic__project=world.project, topic__name="News")
    run = AutomationRunFactory(automation__project=world.project, contact=contact)
    RunStepFactory(run=run, started_at=T0 + dt.timedelta(seconds=7))
    ToolCall.objects.create(
        api_key_id=uuid.uuid4(),
        project_id=world.project.id,
        tool="contacts_get",
        outcome="ok",
        status=200,
        duration_ms=6.84193500001129,
        created_at=T0,
    )

    contact_html = admin_client.get(contact_page(contact)).content.decode()
    run_html = admin_client.get(
        reverse("admin:automations_automationrun_change", args=[run.pk])
    ).content.decode()
    runs_html = admin_client.get(reverse("admin:automations_automationrun_changelist")).content
    calls_html = admin_client.get(reverse("admin:agent_toolcall_changelist")).content.decode()

    # Relations by name, not "<uuid> in <uuid>".
    assert "ada@example.com in VIP" in contact_html
    assert "ada@example.com subscribed to News" in contact_html
    # Times to the second; the runs list names each run's contact.
    assert "2026-01-01 12:00:07" in run_html
    assert b"ada@example.com" in runs_html
    # Durations rounded, with their unit; date columns kept on one line.
    assert "6.8 ms" in calls_html
    assert "6.84193500001129" not in calls_html
    assert "console/console.css" in calls_html
