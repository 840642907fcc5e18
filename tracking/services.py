"""Segment messages stored through the native services, so a batch is accepted whole or not
at all.

Every message is an event, ingested with the native batch ingest in one statement, its
`messageId` the idempotency key. A request whose messages change no contact (`track`,
`page`, `screen`) is that statement alone, which commits by itself as the native batch's
does. A request with identify, group or alias messages runs in one transaction: they
change contacts and audiences, each only when its event was new. The key's row (events'
`EventKey`, unique per project and key) is inserted before the change in the same
transaction, and a concurrent request with the same `messageId` waits on that row until
this one commits (then finds its key taken and changes nothing) or rolls back (then makes
the change itself). So a message resent any number of times, however concurrently,
changes contacts once."""

import uuid
from contextlib import nullcontext
from typing import Any

from django.db import transaction

from config.api.errors import Issue, NotFound, ServiceError
from contacts.audiences.services import (
    audience_properties_ensure,
    audiences_ensure,
    membership_add,
)
from contacts.errors import ExternalIdTaken
from contacts.selectors import UpsertCandidate, contact_get_by_external_id
from contacts.services import MISSING, contact_update, contact_upsert, contacts_upsert_many
from events.services.ingest import IngestResult, event_ingest_batch
from tenancy.models import Project
from tracking.messages import Message


def tracking_ingest(*, project: Project, messages: list[Message], prefixes: list[str]) -> None:
    """Stores `messages` (valid, in order; `prefixes` locate each in the body for errors)
    as their events and contact changes, all or none."""
    # Events alone are one statement, whole or not at all; contact changes join them in a
    # transaction (which costs its own `COMMIT` round trip).
    changes = not _CHANGES.keys().isdisjoint({message.call for message in messages})
    with transaction.atomic() if changes else nullcontext():
        results = event_ingest_batch(project=project, items=[m.event for m in messages])
        for message, result, prefix in zip(messages, results, prefixes, strict=True):
            if not isinstance(result, IngestResult):
                raise result  # Parsed items are valid: not reached.
            if result.duplicate or message.call not in _CHANGES:
                continue
            try:
                _CHANGES[message.call](project, message)
            except ServiceError as error:
                raise _located(error, prefix) from None


# Where the contact services' members come from in a Segment message.
_SOURCES = {
    "fields": "traits",
    "properties": "traits",
    "email": "traits.email",
    "external_id": "userId",
    "contact_id": "userId",
}


def _located(error: ServiceError, prefix: str) -> ServiceError:
    """A contact service's error with its paths named as the message's members."""
    moved = []
    for issue in error.issues or [Issue(error.code, "", error.message)]:
        member, dot, rest = issue.path.partition(".")
        source = _SOURCES.get(member, member)
        path = f"{prefix}{source}{dot}{rest}" if source else prefix.rstrip(".")
        moved.append(Issue(issue.code, path, issue.message))
    error.issues = moved
    return error


def _contact_id(
    project: Project,
    *,
    user_id: str | None,
    email: str | None,
    fields: dict[str, Any] | None,
    email_sets: bool,
) -> uuid.UUID | None:
    """The contact a message names, made when there is none, in the native order: the
    contact whose external id is `userId`, else the one with the email (given `userId`
    as its external id), else a new one with `userId` alone. With `email_sets` a contact
    found by `userId` takes the email (identify). `fields` merge as in an upsert."""
    if user_id is not None:
        found = contact_get_by_external_id(project=project, external_id=user_id)
        if found is not None:
            if fields or (email_sets and email is not None and email != found.email):
                contact_update(
                    project=project,
                    contact_id=found.id,
                    email=email if email_sets and email is not None else MISSING,
                    fields=fields,
                )
            return found.id
    if email is not None:
        contact, _ = contact_upsert(
            project=project, email=email, fields=fields, external_id=user_id
        )
        return contact.id
    if user_id is None:
        return None
    # A contact known by its external id alone, made (or found, if another writer made it
    # meanwhile) by the bulk upsert keyed on the external id; then the fields merge.
    written = contacts_upsert_many(
        project=project,
        candidates=[UpsertCandidate(email=None, external_id=user_id, fields_json="{}")],
        by="external_id",
    )[0]
    if written is not None:
        contact_id = written[0]
    else:
        found = contact_get_by_external_id(project=project, external_id=user_id)
        if found is None:
            raise NotFound("The contact was deleted meanwhile; send the message again.")
        contact_id = found.id
    if fields:
        contact_update(project=project, contact_id=contact_id, fields=fields)
    return contact_id


def _identify(project: Project, message: Message) -> None:
    """Upserts the contact: `userId` its external id, `traits.email` its email, the other
    traits its fields. An anonymous identify changes no contact."""
    _contact_id(
        project,
        user_id=message.user_id,
        email=message.email,
        fields=message.traits,
        email_sets=True,
    )


def _group(project: Project, message: Message) -> None:
    """Puts the contact into the audience named `groupId` (made on first use), its traits
    the membership's properties (declared on first use, typed by their first value)."""
    contact_id = _contact_id(
        project, user_id=message.user_id, email=message.email, fields=None, email_sets=False
    )
    if contact_id is None or message.group_id is None:
        return
    audience = audiences_ensure(project=project, names=[message.group_id])[message.group_id.lower()]
    audience_properties_ensure(audience=audience, types=message.property_types or {})
    membership_add(
        project=project,
        audience_id=audience.id,
        contact_id=contact_id,
        properties=message.traits,
    )


def _alias(project: Project, message: Message) -> None:
    """Gives the contact known as `previousId` the external id `userId` when no contact
    has `userId` yet; otherwise nothing changes (contacts are never merged)."""
    new, previous = message.user_id, message.previous_id
    if new is None or previous is None:
        return
    if contact_get_by_external_id(project=project, external_id=new) is not None:
        return
    found = contact_get_by_external_id(project=project, external_id=previous)
    if found is None:
        return
    try:
        contact_update(project=project, contact_id=found.id, external_id=new)
    except (ExternalIdTaken, NotFound):
        # Another writer gave `userId` to a contact (or deleted this one) meanwhile: the
        # rule holds as it would have a moment later.
        return


_CHANGES = {"identify": _identify, "group": _group, "alias": _alias}
