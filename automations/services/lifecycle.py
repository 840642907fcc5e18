"""The lifecycle of an automation: publish, pause, resume, archive; and what each would
change (the effects a prepared action shows before it is executed).

    draft   --publish--> active --pause--> paused --resume--> active
    active, paused --publish--> (same status, new published version)
    draft, active, paused --archive--> archived (final)

Each runs under the automation's row lock. Executing a prepared action passes the
effects it was prepared with: when the automation moved since (another status, another
draft or an edited one), the action is refused with 409 and must be prepared again, so
what runs is what was reviewed.
"""

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.db import transaction

from automations.definition.audiences import AUDIENCE_EVENTS, trigger_audience
from automations.definition.validation import TemplateRef, definition_check
from automations.errors import (
    DraftNotPublishable,
    NoDraftToPublish,
    PreparedStateChanged,
    TransitionNotAllowed,
)
from automations.models import (
    Automation,
    AutomationStatus,
    AutomationVersion,
    AutomationVersionState,
)
from automations.selectors import automation_get, automation_runs_in_progress
from automations.services.automations import automation_locked, stamped_save
from automations.services.runs import runs_release, runs_stop
from automations.services.triggers import triggers_changed
from config.api.errors import Issue, ValidationFailed, or_404
from config.runtime import clock
from contacts.audiences.selectors import audience_get
from messaging.selectors.templates import template_list
from tenancy.models import Project

ACTIONS = ("publish", "pause", "resume", "archive")

ALLOWED_FROM: dict[str, frozenset[str]] = {
    "publish": frozenset(
        {AutomationStatus.DRAFT, AutomationStatus.ACTIVE, AutomationStatus.PAUSED}
    ),
    "pause": frozenset({AutomationStatus.ACTIVE}),
    "resume": frozenset({AutomationStatus.PAUSED}),
    "archive": frozenset(
        {AutomationStatus.DRAFT, AutomationStatus.ACTIVE, AutomationStatus.PAUSED}
    ),
}


def _status_after(action: str, status: str) -> str:
    if action == "publish":
        # A first publish makes the automation live; a paused one stays paused.
        return AutomationStatus.ACTIVE if status == AutomationStatus.DRAFT else status
    return {
        "pause": AutomationStatus.PAUSED,
        "resume": AutomationStatus.ACTIVE,
        "archive": AutomationStatus.ARCHIVED,
    }[action]


def _allowed(automation: Automation, action: str) -> None:
    if automation.status not in ALLOWED_FROM[action]:
        raise TransitionNotAllowed(action=action, status=automation.status)


def _template_issues(project: Project, refs: tuple[TemplateRef, ...]) -> list[Issue]:
    """Every send step's template must be the project's, of the step's channel, and
    published (runs send its published version). One query for all of them."""
    wanted = {ref.template_id.lower() for ref in refs}
    templates = {
        str(template.id): template
        for template in template_list(project=project).filter(id__in=wanted)
    }
    issues = []
    for ref in refs:
        template = templates.get(ref.template_id.lower())
        if template is None:
            issues.append(Issue("not_found", ref.path, "The project has no such template."))
        elif template.channel != ref.channel:
            issues.append(
                Issue(
                    "wrong_channel",
                    ref.path,
                    f"Step `{ref.step_key}` sends {ref.channel}; this template is for "
                    f"{template.channel}.",
                )
            )
        # An annotation of template_list (messaging's selector), invisible to the plugin.
        elif template.published_version_id is None:  # type: ignore[attr-defined]
            issues.append(
                Issue(
                    "not_published",
                    ref.path,
                    "The template has no published version yet; publish it first.",
                )
            )
    return issues


def _publishable(project: Project, draft: AutomationVersion) -> str:
    """The draft's trigger event, or 409 with an issue for each thing in its way."""
    try:
        checked = definition_check(draft.definition)
    except ValidationFailed as invalid:
        raise DraftNotPublishable(
            invalid.issues, "The draft no longer passes the definition checks; edit it first."
        ) from None
    issues = _template_issues(project, checked.template_refs)
    if issues:
        raise DraftNotPublishable(issues, "The draft's templates are not ready to publish.")
    audience_id = trigger_audience(draft.definition["trigger"])
    if audience_id is not None and audience_get(project=project, audience_id=audience_id) is None:
        member = next(m for m in AUDIENCE_EVENTS if m in draft.definition["trigger"])
        issue = Issue("not_found", f"definition.trigger.{member}", "No such audience.")
        raise DraftNotPublishable([issue], "The draft's audience does not exist.")
    return checked.trigger_event


def _version_ref(version: AutomationVersion | None) -> dict[str, Any] | None:
    if version is None:
        return None
    return {
        "id": str(version.id),
        "version_number": version.version_number,
        "updated_at": clock.iso_utc(version.updated_at),
    }


def automation_action_effects(
    *, project: Project, automation_id: uuid.UUID | str, action: str
) -> dict[str, Any]:
    """What `action` would change, checked as executing would check it (404, 409)."""
    automation = or_404(
        automation_get(project=project, automation_id=automation_id), "No such automation."
    )
    _allowed(automation, action)
    in_progress = automation_runs_in_progress(automation=automation)
    effects: dict[str, Any] = {
        "automation_id": str(automation.id),
        "name": automation.name,
        "action": action,
        "status": {"from": automation.status, "to": _status_after(action, automation.status)},
        "runs_in_progress": in_progress,
    }
    if action == "publish":
        draft = automation.current_draft_version
        if draft is None:
            raise NoDraftToPublish()
        effects["trigger_event"] = _publishable(project, draft)
        effects["version"] = _version_ref(draft)
        # Runs already started finish on the version they started with.
        effects["superseded_version"] = _version_ref(automation.current_published_version)
    if action == "archive":
        effects["runs_to_cancel"] = sum(in_progress.values())
    return effects


def _unchanged_since(
    automation: Automation, action: str, prepared: Mapping[str, Any] | None
) -> None:
    if prepared is None:
        return
    moved = prepared.get("status", {}).get("from") != automation.status
    if action == "publish":
        moved = moved or prepared.get("version") != _version_ref(automation.current_draft_version)
    if moved:
        raise PreparedStateChanged()


def automation_publish(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    prepared: Mapping[str, Any] | None = None,
) -> Automation:
    """Publishes the draft: it becomes the version new runs follow; the version published
    before is `superseded` (its runs go on). A `draft` automation becomes `active`."""
    with transaction.atomic():
        automation = automation_locked(project=project, automation_id=automation_id)
        _allowed(automation, "publish")
        _unchanged_since(automation, "publish", prepared)
        draft = automation.current_draft_version
        if draft is None:
            raise NoDraftToPublish()
        trigger_event = _publishable(project, draft)
        now = clock.now()
        # First the old one, then the draft: the constraint allows one published version.
        automation.versions.filter(state=AutomationVersionState.PUBLISHED).update(
            state=AutomationVersionState.SUPERSEDED, updated_at=now
        )
        draft.state = AutomationVersionState.PUBLISHED
        draft.published_at = now
        stamped_save(draft, ["state", "published_at"])
        automation.status = _status_after("publish", automation.status)
        automation.current_published_version = draft
        automation.current_draft_version = None
        automation.trigger_event = trigger_event
        stamped_save(
            automation,
            ["status", "current_published_version", "current_draft_version", "trigger_event"],
        )
        triggers_changed(project_id=project.id)
    return automation


def _status_change(
    project: Project,
    automation_id: uuid.UUID | str,
    action: str,
    prepared: Mapping[str, Any] | None,
) -> Automation:
    with transaction.atomic():
        automation = automation_locked(project=project, automation_id=automation_id)
        _allowed(automation, action)
        _unchanged_since(automation, action, prepared)
        automation.status = _status_after(action, automation.status)
        stamped_save(automation, ["status"])
        if action == "archive":
            runs_stop(automation=automation, reason="The automation was archived.", archived=True)
        if action == "resume":
            runs_release(automation=automation)
        triggers_changed(project_id=project.id)
    return automation


def automation_pause(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    prepared: Mapping[str, Any] | None = None,
) -> Automation:
    """Pauses an active automation: no run starts while it is paused (its trigger events
    are not queued for later), and runs in progress hold before their next step until it
    is resumed; their waits still match events and time out meanwhile."""
    return _status_change(project, automation_id, "pause", prepared)


def automation_resume(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    prepared: Mapping[str, Any] | None = None,
) -> Automation:
    """Resumes a paused automation: runs start again and held runs go on."""
    return _status_change(project, automation_id, "resume", prepared)


def automation_archive(
    *,
    project: Project,
    automation_id: uuid.UUID | str,
    prepared: Mapping[str, Any] | None = None,
) -> Automation:
    """Archives the automation for good: it starts no run, and its runs in progress end
    with `terminal_reason: archived` (running ones at their next step)."""
    return _status_change(project, automation_id, "archive", prepared)


AUTOMATION_ACTIONS: dict[str, Callable[..., Automation]] = {
    "publish": automation_publish,
    "pause": automation_pause,
    "resume": automation_resume,
    "archive": automation_archive,
}
