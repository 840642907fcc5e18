"""Writes of message templates: create, edit the draft, publish, restore, delete; and the
preview, which renders without sending.

Every change of a template's versions runs under a row lock on the template, so
concurrent edits, publishes and restores are serialised: there is never a second draft
or a second published version (the partial unique constraints would refuse one anyway).
"""

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Max

from config.api.errors import Conflict, Issue, NotFound, ValidationFailed, or_404
from config.runtime import clock
from contacts.selectors import contact_get
from messaging.errors import DraftIncomplete, NoDraftToPublish
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState
from messaging.selectors.templates import (
    template_get,
    template_version_current,
    template_version_get,
    template_version_published,
    with_version_ids,
)
from messaging.services.rendering import (
    CHANNEL_FIELDS,
    EventLike,
    RenderedEmail,
    RenderedPush,
    liquid_issues,
    render_version,
    template_context,
)
from tenancy.models import Project

CONTENT_FIELDS = ("subject", "html", "text", "title", "body", "data")
# What a send naming a template of the other channel is told, by the channel it wanted.
NOT_OF_CHANNEL: dict[str, str] = {
    Channel.EMAIL: "This is not an email template.",
    Channel.PUSH: "This is not a push template.",
}


def _content_checked(channel: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """The content members, or 400 with every member of the other channel and every
    member that is not valid Liquid."""
    own = CHANNEL_FIELDS[Channel(channel)]
    issues = [
        Issue(
            code="wrong_channel",
            path=name,
            message=f"{channel.capitalize()} templates have no `{name}`; they use "
            f"{', '.join(f'`{member}`' for member in own)}.",
        )
        for name in content
        if name not in own
    ]
    issues += liquid_issues({name: value for name, value in content.items() if name in own})
    if issues:
        raise ValidationFailed("The template content is not valid.", issues=issues)
    return dict(content)


def _content_of(version: TemplateVersion | None) -> dict[str, Any]:
    return {name: getattr(version, name) if version else None for name in CONTENT_FIELDS}


def _answer(template: MessageTemplate) -> MessageTemplate:
    """The template as answers show it, with its draft and published version ids."""
    return with_version_ids(MessageTemplate.objects.filter(pk=template.pk)).get()


def _active(project: Project, template_id: uuid.UUID | str) -> MessageTemplate:
    return or_404(template_get(project=project, template_id=template_id), "No such template.")


def _locked(project: Project, template_id: uuid.UUID | str) -> MessageTemplate:
    """The active template, its row locked until the transaction ends; 404 otherwise."""
    template = (
        MessageTemplate.objects.select_for_update()
        .filter(project=project, id=template_id, deleted_at__isnull=True)
        .first()
    )
    if template is None:
        raise NotFound("No such template.")
    return template


def _version_in(template: MessageTemplate, state: str) -> TemplateVersion | None:
    return template.versions.filter(state=state).first()


def _new_version(
    template: MessageTemplate,
    content: Mapping[str, Any],
    *,
    restored_from: TemplateVersion | None = None,
) -> TemplateVersion:
    """A new draft numbered after every existing version. Call with the template locked."""
    last = template.versions.aggregate(last=Max("version_number"))["last"] or 0
    return TemplateVersion.objects.create(
        template=template,
        version_number=last + 1,
        state=VersionState.DRAFT,
        restored_from_version=restored_from,
        **{name: content.get(name) for name in CONTENT_FIELDS},
    )


def template_create(
    *,
    project: Project,
    name: str,
    channel: str,
    from_email: str | None = None,
    content: Mapping[str, Any] | None = None,
) -> MessageTemplate:
    """A new template whose first draft (version 1) holds `content`."""
    checked = _content_checked(channel, content or {})
    with transaction.atomic():
        template = MessageTemplate.objects.create(
            project=project, name=name, channel=channel, from_email=from_email
        )
        _new_version(template, checked)
    return _answer(template)


def template_update(
    *, project: Project, template_id: uuid.UUID | str, changes: Mapping[str, Any]
) -> MessageTemplate:
    """Renames the template, changes its sender, and edits its draft.

    `changes` holds any of `name`, `from_email` and the content members (None clears
    one). Content goes to the draft; without one, a new draft starts from the published
    version. A change that leaves everything as it was stores nothing.
    """
    # The channel never changes, so the content is checked before taking the lock.
    content = {name: value for name, value in changes.items() if name in CONTENT_FIELDS}
    content = _content_checked(_active(project, template_id).channel, content)
    with transaction.atomic():
        template = _locked(project, template_id)
        changed = [
            name
            for name in ("name", "from_email")
            if name in changes and getattr(template, name) != changes[name]
        ]
        for name in changed:
            setattr(template, name, changes[name])
        edited = bool(content) and _draft_edited(template, content)
        if changed or edited:
            template.save(update_fields=[*changed, "updated_at"])
    return _answer(template)


def _draft_edited(template: MessageTemplate, content: Mapping[str, Any]) -> bool:
    """Writes `content` into the draft (made from the published version when there is
    none); False when that changes nothing."""
    draft = _version_in(template, VersionState.DRAFT)
    if draft is None:
        base = _content_of(_version_in(template, VersionState.PUBLISHED))
        if {**base, **content} == base:
            return False
        _new_version(template, {**base, **content})
        return True
    edited = [name for name, value in content.items() if getattr(draft, name) != value]
    for name in edited:
        setattr(draft, name, content[name])
    if edited:
        draft.save(update_fields=edited)
    return bool(edited)


def _publishable(channel: str, version: TemplateVersion) -> None:
    def given(value: str | None) -> bool:
        return bool(value and value.strip())

    issues: list[Issue] = []
    if channel == Channel.EMAIL:
        if not given(version.subject):
            issues.append(
                Issue(code="required", path="subject", message="An email needs a subject.")
            )
        if not given(version.html) and not given(version.text):
            issues.append(
                Issue(code="required", path="html", message="An email needs `html` or `text`.")
            )
    elif not given(version.title) and not given(version.body):
        issues.append(
            Issue(code="required", path="body", message="A push needs a `title` or a `body`.")
        )
    if issues:
        raise DraftIncomplete(issues)


def template_publish(*, project: Project, template_id: uuid.UUID | str) -> MessageTemplate:
    """Publishes the draft; the version published before becomes `superseded`."""
    with transaction.atomic():
        template = _locked(project, template_id)
        draft = _version_in(template, VersionState.DRAFT)
        if draft is None:
            raise NoDraftToPublish()
        _publishable(template.channel, draft)
        # First the old one, then the draft: the constraint allows one published version.
        template.versions.filter(state=VersionState.PUBLISHED).update(state=VersionState.SUPERSEDED)
        draft.state = VersionState.PUBLISHED
        draft.published_at = clock.now()
        draft.save(update_fields=["state", "published_at"])
        template.save(update_fields=["updated_at"])
    return _answer(template)


def template_version_restore(
    *, project: Project, template_id: uuid.UUID | str, version_id: uuid.UUID | str
) -> TemplateVersion:
    """A new draft with the content of an earlier version. The draft it replaces stays
    in the history as `superseded` (never published), so nothing is lost."""
    with transaction.atomic():
        template = _locked(project, template_id)
        source = or_404(
            template_version_get(template=template, version_id=version_id), "No such version."
        )
        own = CHANNEL_FIELDS[Channel(template.channel)]
        content = _content_checked(template.channel, {name: getattr(source, name) for name in own})
        template.versions.filter(state=VersionState.DRAFT).update(state=VersionState.SUPERSEDED)
        draft = _new_version(template, content, restored_from=source)
        template.save(update_fields=["updated_at"])
    return draft


def template_delete(*, project: Project, template_id: uuid.UUID | str) -> MessageTemplate:
    """Soft-deletes the template: it is 404 from now on; its versions are kept."""
    with transaction.atomic():
        template = _locked(project, template_id)
        template.deleted_at = clock.now()
        template.save(update_fields=["deleted_at", "updated_at"])
    return _answer(template)


def template_preview(
    *,
    project: Project,
    template_id: uuid.UUID | str,
    version_id: uuid.UUID | str | None = None,
    contact_id: uuid.UUID | str | None = None,
    event: EventLike | None = None,
    data: Mapping[str, Any] | None = None,
) -> RenderedEmail | RenderedPush:
    """Renders a version (default: the draft, else the published one) with a contact, an
    event and data as a send would; stores and sends nothing."""
    template = _active(project, template_id)
    if version_id is not None:
        version = template_version_get(template=template, version_id=version_id)
        if version is None:
            raise ValidationFailed.at(
                "version_id", "The template has no such version.", code="not_found"
            )
    else:
        version = or_404(template_version_current(template=template), "The template is empty.")
    contact = None
    if contact_id is not None:
        contact = contact_get(project=project, contact_id=contact_id)
        if contact is None:
            raise ValidationFailed.at("contact_id", "No such contact.", code="not_found")
    variables = template_context(project=project, contact=contact, event=event, data=data)
    return render_version(version, variables)


def template_published_to_send(
    *, project: Project, template_id: uuid.UUID, channel: str
) -> tuple[MessageTemplate, TemplateVersion]:
    """The template a send names (`template_id`) and its published version: 400 when the
    template is unknown or of another channel, 409 when it has no published version. The
    one check of every sender of a template, email or push."""
    template = template_get(project=project, template_id=template_id)
    if template is None:
        raise ValidationFailed.at("template_id", "No such template.", code="not_found")
    if template.channel != channel:
        raise ValidationFailed.at("template_id", NOT_OF_CHANNEL[channel], code="wrong_channel")
    version = template_version_published(template=template)
    if version is None:
        raise Conflict(
            "The template has no published version; publish it first.",
            issues=[
                Issue(
                    code="not_published",
                    path="template_id",
                    message="The template has no published version.",
                )
            ],
        )
    return template, version
