"""Test runs (`POST /automations/{id}/test-runs`): one run of a version for one contact,
executed to its end inside the request on a virtual clock, so a user sees in one call
what a live run would do over days.

The run is stored (`execution_mode: test`) with its timeline and waits, all resolved: it
never waits, so no real event can ever match it, and no real trigger starts one. Sends
are rendered and kept on their step (`rendered`); nothing is stored that a worker would
deliver. `update_contact` changes a copy of the contact. Reentry rules do not apply.
"""

import datetime as dt
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from automations.conf import test_run_step_limit
from automations.definition.audiences import trigger_event_of
from automations.definition.conditions import condition_holds, payload_value
from automations.models import (
    AutomationRun,
    ExecutionMode,
    IdentityType,
    RunStatus,
)
from automations.selectors import automation_get, automation_run_get, automation_version_get
from automations.services.facts import contact_facts
from automations.services.goals import holdout_chosen
from automations.services.history import History
from automations.services.testengine import InjectedEvent, TestEngine
from config.api.errors import Issue, Unprocessable, ValidationFailed, or_404
from config.api.jsonvalues import json_size_checked
from config.runtime import clock
from contacts.models import Contact
from contacts.normalization import email_normalised
from contacts.selectors import contact_get, contact_get_by_email
from tenancy.models import Project

# `after` may be zero (an event at the very start), unlike a definition's durations.
_AFTER = re.compile(
    r"P(?:(\d{1,9})W)?(?:(\d{1,9})D)?(?:T(?=\d)(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,12})S)?)?"
)
# How far injected events and start times may lie from now.
MAX_AFTER = dt.timedelta(days=3660)


class TriggerNotPassed(Unprocessable):
    code = "trigger_not_passed"


def after_duration(text: str) -> dt.timedelta | None:
    """An injected event's `after` (`PT0S`, `PT30M`, `P2D`), or None when it is not such a
    duration or lies beyond ten years."""
    match = _AFTER.fullmatch(text)
    if match is None or text == "P":
        return None
    weeks, days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = (((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if total > MAX_AFTER.total_seconds():
        return None
    return dt.timedelta(seconds=total)


def _contact(
    project: Project, *, email: str | None, contact_id: uuid.UUID | None
) -> tuple[Contact, str, str]:
    """The contact the run is for, how it was named and by what. An email no contact has
    gives a contact that is not stored (no fields, no devices)."""
    if contact_id is not None:
        contact = contact_get(project=project, contact_id=contact_id)
        if contact is None:
            raise ValidationFailed.at("contact_id", "No such contact.", code="not_found")
        return contact, IdentityType.CONTACT_ID, str(contact.id)
    assert email is not None
    normalised = email_normalised(project=project, email=email)
    found = contact_get_by_email(project=project, email=normalised)
    if found is not None:
        return found, IdentityType.EMAIL, normalised
    return (
        Contact(id=None, project=project, email=normalised, fields={}),
        IdentityType.EMAIL,
        normalised,
    )


def _events(
    project: Project, events: Sequence[Mapping[str, Any]], start: dt.datetime
) -> list[InjectedEvent]:
    injected = []
    for index, each in enumerate(events):
        after = after_duration(each["after"])
        if after is None:
            raise ValidationFailed.at(
                f"events.{index}.after",
                "Must be an ISO 8601 duration from `PT0S`, in weeks, days, hours, minutes and "
                "seconds (`PT30M`, `P2D`).",
                code="invalid_duration",
            )
        payload = dict(each.get("payload") or {})
        json_size_checked(
            payload,
            limit=project.event_payload_limit_bytes,
            path=f"events.{index}.payload",
            policy="event_payload_limit_bytes",
        )
        injected.append(InjectedEvent(event=each["event"], payload=payload, at=start + after))
    return injected


def automation_test_run(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    email: str | None = None,
    contact_id: uuid.UUID | None = None,
    payload: Mapping[str, Any] | None = None,
    events: Sequence[Mapping[str, Any]] = (),
    start_at: dt.datetime | None = None,
    version_id: uuid.UUID | None = None,
) -> AutomationRun:
    """Runs the automation's published version (else its draft, or `version_id`) for one
    contact to its end on a virtual clock starting at `start_at` (default: now); returns
    the finished run. A payload the trigger filter refuses, or that lacks the correlation
    value `once_per_correlation` needs, is 422: a live run would not start."""
    automation = or_404(
        automation_get(project=project, automation_id=automation_id), "No such automation."
    )
    if version_id is not None:
        version = automation_version_get(automation=automation, version_id=version_id)
        if version is None:
            raise ValidationFailed.at("version", "No such version.", code="not_found")
    else:
        version = automation.current_published_version or automation.current_draft_version
        if version is None:
            raise ValidationFailed.at("version", "The automation has no version to run.")
    payload = dict(payload or {})
    json_size_checked(
        payload,
        limit=project.event_payload_limit_bytes,
        path="payload",
        policy="event_payload_limit_bytes",
    )
    contact, identity_type, identity_value = _contact(project, email=email, contact_id=contact_id)
    now = clock.now()
    start = start_at or now
    injected = _events(project, events, start)
    definition = version.definition
    trigger = definition["trigger"]
    if not condition_holds(
        trigger.get("filter"), {"payload": payload, "contact": contact_facts(contact)}
    ):
        raise TriggerNotPassed(
            "The trigger filter refuses this payload and contact: a live run would not start.",
            issues=[Issue("filter_not_passed", "payload", "The trigger filter does not hold.")],
        )
    settings = definition.get("settings") or {}
    correlation_key = settings.get("correlation_key")
    correlation = payload_value(payload, correlation_key) if correlation_key else None
    if settings.get("reentry") == "once_per_correlation" and correlation is None:
        raise TriggerNotPassed(
            f"The payload has no `{correlation_key}`: a live run of a `once_per_correlation` "
            "automation would not start.",
            issues=[Issue("correlation_missing", f"payload.{correlation_key}", "Required here.")],
        )
    with transaction.atomic():
        run = AutomationRun.objects.create(
            project=project,
            automation=automation,
            version=version,
            contact=contact if contact.pk is not None else None,
            trigger_event_name=trigger_event_of(trigger),
            trigger_payload=payload,
            resolved_identity_type=identity_type,
            resolved_identity_value=identity_value,
            correlation_key=correlation_key,
            correlation_value=correlation,
            execution_mode=ExecutionMode.TEST,
            would_be_held_out=(
                holdout_chosen(
                    contact_id=contact.pk,
                    automation_id=automation.id,
                    percent=settings.get("holdout_percent", 0),
                )
                if contact.pk is not None
                else None
            ),
            status=RunStatus.PENDING,
            current_step_key=definition["start"],
            virtual_now=start,
            created_at=now,
            updated_at=now,
        )
        engine = TestEngine(
            run=run,
            history=History([], []),
            contact=contact,
            events=injected,
            step_limit=test_run_step_limit(),
        )
        engine.walk(definition["start"])
        engine.save()
    return or_404(automation_run_get(automation=automation, run_id=run.id), "No such run.")
