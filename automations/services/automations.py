"""Writes of automations and their versions: create, edit the draft, restore, delete.

Every change of an automation's versions runs under a row lock on the automation, so
concurrent edits, restores and publishes are serialised: there is never a second draft
or a second published version (the partial unique constraints would refuse one anyway).
"""

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Max

from automations.definition.validation import definition_check
from automations.errors import AutomationArchived
from automations.models import (
    Automation,
    AutomationStatus,
    AutomationVersion,
    AutomationVersionState,
)
from automations.services.runs import runs_stop
from automations.services.triggers import triggers_changed
from config.api.errors import Issue, NotFound, ValidationFailed, or_404
from config.api.jsonvalues import json_size, stored_json_issues
from config.runtime import clock
from tenancy.models import Project

# The editor's layout is opaque to the service, but bounded like any stored value.
MAX_EDITOR_LAYOUT_BYTES = 1024 * 1024
CONTENT_FIELDS = ("definition", "editor_layout")


def stamped_save(instance: Automation | AutomationVersion, fields: list[str]) -> None:
    """Saves `fields` and `updated_at`, stamped by the service clock (which tests move)."""
    instance.updated_at = clock.now()
    instance.save(update_fields=[*fields, "updated_at"])


def editor_layout_check(layout: Any, *, path: str = "editor_layout") -> None:
    """400 for a layout that is not an object (or null), cannot be stored, or is too big."""
    if layout is None:
        return
    if not isinstance(layout, dict):
        raise ValidationFailed.at(path, "Must be a JSON object or null.", code="invalid_type")
    issues = stored_json_issues(layout, path)
    if not issues and json_size(layout) > MAX_EDITOR_LAYOUT_BYTES:
        issues = [
            Issue("too_large", path, f"Must be at most {MAX_EDITOR_LAYOUT_BYTES} bytes as JSON.")
        ]
    if issues:
        raise ValidationFailed("The editor layout is not valid.", issues=issues)


def automation_locked(*, project: Project, automation_id: uuid.UUID | str) -> Automation:
    """The automation (not deleted), its row locked until the transaction ends; 404
    otherwise."""
    automation = (
        Automation.objects.select_for_update()
        .filter(project=project, id=automation_id, deleted_at__isnull=True)
        .first()
    )
    return or_404(automation, "No such automation.")


def _new_version(
    automation: Automation,
    *,
    definition: Any,
    editor_layout: Any,
    restored_from: AutomationVersion | None = None,
) -> AutomationVersion:
    """A new draft numbered after every existing version, made the automation's current
    draft. Call with the automation locked; the caller saves the automation."""
    last = automation.versions.aggregate(last=Max("version_number"))["last"] or 0
    draft = AutomationVersion.objects.create(
        automation=automation,
        version_number=last + 1,
        state=AutomationVersionState.DRAFT,
        definition=definition,
        editor_layout=editor_layout,
        restored_from_version=restored_from,
    )
    automation.current_draft_version = draft
    return draft


def automation_create(
    *,
    project: Project,
    name: str,
    definition: Any,
    description: str | None = None,
    editor_layout: Any = None,
) -> Automation:
    """A new automation in `draft` whose first version (a draft) holds the definition."""
    definition_check(definition)
    editor_layout_check(editor_layout)
    with transaction.atomic():
        automation = Automation.objects.create(project=project, name=name, description=description)
        _new_version(automation, definition=definition, editor_layout=editor_layout)
        stamped_save(automation, ["current_draft_version"])
    return automation


def automation_update(
    *, project: Project, automation_id: uuid.UUID | str, changes: Mapping[str, Any]
) -> Automation:
    """Renames the automation, changes its description, and edits its draft.

    `changes` holds any of `name`, `description`, `definition` and `editor_layout`. The
    definition and layout go to the draft; without one, a new draft starts from the
    published version. A change that leaves everything as it was stores nothing. An
    archived automation does not change (409).
    """
    if "definition" in changes:
        definition_check(changes["definition"])
    if "editor_layout" in changes:
        editor_layout_check(changes["editor_layout"])
    content = {name: value for name, value in changes.items() if name in CONTENT_FIELDS}
    with transaction.atomic():
        automation = automation_locked(project=project, automation_id=automation_id)
        if automation.status == AutomationStatus.ARCHIVED:
            raise AutomationArchived(action="edit")
        changed = [
            name
            for name in ("name", "description")
            if name in changes and getattr(automation, name) != changes[name]
        ]
        for name in changed:
            setattr(automation, name, changes[name])
        edited = bool(content) and _draft_edited(automation, content)
        if changed or edited:
            stamped_save(automation, [*changed, "current_draft_version"])
    return automation


def _draft_edited(automation: Automation, content: Mapping[str, Any]) -> bool:
    """Writes `content` into the draft (made from the published version when there is
    none); False when that changes nothing."""
    draft = automation.current_draft_version
    if draft is None:
        published = automation.current_published_version
        base = {name: getattr(published, name) if published else None for name in CONTENT_FIELDS}
        if {**base, **content} == base:
            return False
        _new_version(automation, **{**base, **content})
        return True
    edited = [name for name, value in content.items() if getattr(draft, name) != value]
    for name in edited:
        setattr(draft, name, content[name])
    if edited:
        stamped_save(draft, edited)
    return bool(edited)


def automation_version_restore(
    *, project: Project, automation_id: uuid.UUID | str, version_id: uuid.UUID | str
) -> AutomationVersion:
    """A new draft with the definition and layout of an earlier version. The draft it
    replaces stays in the history as `superseded` (never published), so nothing is lost."""
    with transaction.atomic():
        automation = automation_locked(project=project, automation_id=automation_id)
        source = automation.versions.filter(id=version_id).first()
        if source is None:
            raise NotFound("No such version.")
        if automation.status == AutomationStatus.ARCHIVED:
            raise AutomationArchived(action="restore")
        # Rules may have grown since the version was saved: a draft is always valid.
        definition_check(source.definition)
        automation.versions.filter(state=AutomationVersionState.DRAFT).update(
            state=AutomationVersionState.SUPERSEDED, updated_at=clock.now()
        )
        draft = _new_version(
            automation,
            definition=source.definition,
            editor_layout=source.editor_layout,
            restored_from=source,
        )
        stamped_save(automation, ["current_draft_version"])
    return draft


def automation_delete(*, project: Project, automation_id: uuid.UUID | str) -> Automation:
    """Soft-deletes the automation: it is 404 from now on and starts no run; its runs in
    progress are canceled (waiting and pending ones at once, running ones at their next
    step). Versions and runs are kept."""
    with transaction.atomic():
        automation = automation_locked(project=project, automation_id=automation_id)
        automation.deleted_at = clock.now()
        stamped_save(automation, ["deleted_at"])
        runs_stop(automation=automation, reason="The automation was deleted.", archived=False)
        triggers_changed(project_id=project.id)
    return automation
