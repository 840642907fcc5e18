"""Writes of contacts."""

import enum
import functools
import json
import uuid
from collections.abc import Collection, Sequence
from contextlib import nullcontext
from typing import Any, Literal

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction

from config.api.errors import Conflict, NotFound, ValidationFailed
from config.api.jsonvalues import json_size_checked, serialised, stored_json_issues
from config.db.bulk import rows_fetch
from config.db.cursor import binary_cursor
from config.db.ids import uuid7
from config.db.update import model_update
from config.registries.outbox import (
    SystemEvent,
    system_event_emit,
    system_events_emit,
    system_events_insert_sql,
    system_events_recorded,
)
from config.runtime import clock
from contacts.errors import EmailTaken, ExternalIdTaken
from contacts.hooks import contact_deleted_handlers
from contacts.models import Contact
from contacts.normalization import email_normalised, merge_fields
from contacts.selectors import UpsertCandidate, UpsertedContact
from contacts.statements import CREATE_MISSING_SQL, UPSERT_MANY_SQL, UPSERT_SQL
from tenancy.models import Project

UPSERT_ATTEMPTS = 5


class _Missing(enum.Enum):
    MISSING = "missing"


# "Not given" for members where None has a meaning of its own (PATCH clears external_id).
MISSING = _Missing.MISSING
Missing = Literal[_Missing.MISSING]


def _check_fields(fields: Any) -> dict[str, Any]:
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise ValidationFailed.at("fields", "Must be a JSON object.", code="invalid_type")
    issues = stored_json_issues(fields, "fields")
    if issues:
        raise ValidationFailed(issues=issues)
    return fields


def _check_fields_size(project: Project, fields: dict[str, Any]) -> None:
    """422 `payload_too_large` when merged `fields` exceed the project's bound."""
    json_size_checked(
        fields,
        limit=project.contact_fields_limit_bytes,
        path="fields",
        policy="contact_fields_limit_bytes",
    )


def _check_external_id(external_id: Any) -> None:
    if external_id is not None and (
        not isinstance(external_id, str) or not 1 <= len(external_id) <= 255
    ):
        raise ValidationFailed.at(
            "external_id", "Must be a string of 1 to 255 characters.", code="invalid"
        )


def _constraint_of(error: IntegrityError) -> str:
    diag = getattr(getattr(error, "__cause__", None), "diag", None)
    return getattr(diag, "constraint_name", None) or str(error)


def _conflict_for(error: IntegrityError) -> Conflict:
    if "external_id" in _constraint_of(error):
        return ExternalIdTaken()
    return EmailTaken()


def contact_event_emit(
    *, project: Project, name: str, contact: Contact, payload: dict[str, Any]
) -> None:
    """Records the system event `sendrealm.<name>` about `contact` in the caller's
    transaction (through the outbox), with the contact's identity as it is now."""
    system_event_emit(
        project=project,
        name=name,
        payload=payload,
        contact_id=contact.id,
        email=contact.email,
        external_id=contact.external_id,
    )


def _identity_payload(contact: Contact) -> dict[str, Any]:
    return {
        "contact_id": str(contact.id),
        "email": contact.email,
        "external_id": contact.external_id,
    }


def _emit(project: Project, name: str, contact: Contact) -> None:
    contact_event_emit(
        project=project, name=name, contact=contact, payload=_identity_payload(contact)
    )


def contact_find_for_update(
    *, project: Project, contact_id: uuid.UUID | str | None = None, email: str | None = None
) -> Contact | None:
    """The active contact with `contact_id` (when given) or else with `email` (normalised by
    the project's policy), its row locked until the caller's transaction ends; None when
    there is none.

    The lock orders every read-merge-write of one contact (PATCH, subscriptions,
    memberships) against the others and against its deletion. Call it inside
    `transaction.atomic`. It is FOR NO KEY UPDATE (no write changes a contact's id): rows
    that only refer to the contact (their foreign key check takes FOR KEY SHARE) are not
    held back by it, so writers that lock contacts in different orders while inserting
    such rows do not deadlock at commit.
    """
    contacts = Contact.objects.select_for_update(no_key=True).filter(
        project=project, deleted_at__isnull=True
    )
    if contact_id is not None:
        return contacts.filter(id=contact_id).first()
    if email is not None:
        return contacts.filter(email=email_normalised(project=project, email=email)).first()
    return None


def contact_get_for_update(*, project: Project, contact_id: uuid.UUID | str) -> Contact:
    """The active contact, its row locked as by `contact_find_for_update`; 404 otherwise."""
    contact = contact_find_for_update(project=project, contact_id=contact_id)
    if contact is None:
        raise NotFound("No such contact.")
    return contact


def contact_upsert(
    *,
    project: Project,
    email: str,
    fields: dict[str, Any] | None = None,
    external_id: str | None = None,
) -> tuple[Contact, bool]:
    """The one active contact for `email`, created or updated; returns (contact, created).

    `fields` merges key by key (None removes a key); `external_id` None leaves it as it is.
    Emits `sendrealm.contact.created` or, when something changed, `sendrealm.contact.updated`
    in the same transaction. An external id held by another contact is a 409.
    """
    upserted, created = contact_upsert_row(
        project=project, email=email, fields=fields, external_id=external_id
    )
    return upserted.contact(project), created


def contact_upsert_row(
    *,
    project: Project,
    email: str,
    fields: dict[str, Any] | None = None,
    external_id: str | None = None,
) -> tuple[UpsertedContact, bool]:
    """`contact_upsert`, returning the contact as its row (`UpsertedContact`): for the API's
    answer, which needs no model instance."""
    normalised = email_normalised(project=project, email=email)
    changes = _check_fields(fields)
    _check_external_id(external_id)
    try:
        return _upsert_postgresql(project, normalised, changes, external_id)
    except IntegrityError as error:
        raise _conflict_for(error) from None


def _upsert_run(sql: str, params: dict[str, Any]) -> tuple[UpsertedContact, bool, bool] | None:
    """Runs the upsert statement: (contact, created, written), or None when it wrote
    nothing and its snapshot does not show the upsert as a no-op."""
    # Prepared on the server at its first run on a connection: its plan is most of
    # PostgreSQL's cost of a small upsert.
    rows = rows_fetch(sql, params, prepare=True)
    if not rows:
        return None
    contact_id, email, external_id, fields, created_at, updated_at, created, written = rows[0]
    upserted = UpsertedContact(
        contact_id,
        email,
        external_id,
        json.loads(fields) if isinstance(fields, str) else fields,
        created_at,
        updated_at,
    )
    return upserted, bool(created), bool(written)


def _upsert_postgresql(
    project: Project, email: str, changes: dict[str, Any], external_id: str | None
) -> tuple[UpsertedContact, bool]:
    kept = {key: value for key, value in changes.items() if value is not None}
    # What is set, as the compact JSON the project's bound measures (`_check_fields` let
    # only JSON values through), which the statement also takes as it is.
    kept_json = serialised(kept)
    if len(kept_json.encode("utf-8")) > project.contact_fields_limit_bytes:
        # What is set is part of the result: too large already, no statement is needed.
        _check_fields_size(project, kept)
    now = clock.now()
    events, event_params = system_events_insert_sql(project=project, rows="e")
    sql = _upsert_sql(events)
    params: dict[str, Any] = {
        **event_params,
        "id": uuid.uuid4(),
        # Time-ordered, as every other event's id (events/services/system.py): each goes to
        # the right edge of the events' primary key index, not to a random page of it.
        "event_id": uuid7(),
        "project_id": project.id,
        "email": email,
        "external_id": external_id,
        "set": kept_json,
        "removed": [key for key, value in changes.items() if value is None],
        "now": now,
        # jsonb's text spaces its separators and writes every number Python writes in as
        # many characters or more, so merged fields whose jsonb text fits the bound fit it
        # as `_check_fields_size` measures them (compact JSON of the parsed text). Above
        # it the statement writes nothing, and the merge is measured exactly below.
        "bound": project.contact_fields_limit_bytes,
    }
    db = connections[DEFAULT_DB_ALIAS]
    alone = db.get_autocommit() and not db.in_atomic_block
    for _ in range(UPSERT_ATTEMPTS):
        # Alone it is one round trip in autocommit; in the caller's transaction a savepoint
        # keeps that transaction usable after a 409, as before.
        with nullcontext() if alone else transaction.atomic():
            done = _upsert_run(sql, params)
            if done is not None:
                upserted, created, written = done
                if written:
                    system_events_recorded()
                return upserted, created
        # Merged fields over the bound as jsonb text, or a contact that changed under the
        # statement: merge in a transaction, measure the result exactly, and undo the
        # write (and its event) when it is too large.
        with transaction.atomic():
            done = _upsert_run(sql, {**params, "bound": None})
            if done is None:
                # Matched, and nothing to change now: no write, no event.
                found = Contact.objects.filter(
                    project=project, email=email, deleted_at__isnull=True
                ).first()
                if found is None:
                    continue  # Deleted between the two statements: try again.
                return _upserted(found), False
            upserted, created, written = done
            if written:
                _check_fields_size(project, upserted.fields)
                system_events_recorded()
            return upserted, created
    raise Conflict("The contact changed too often to upsert; try again.")


@functools.cache
def _upsert_sql(events: str) -> str:
    """The upsert statement around the events app's insert of its event."""
    return UPSERT_SQL.format(events=events)


def _upserted(contact: Contact) -> UpsertedContact:
    return UpsertedContact(
        contact.id,
        contact.email,
        contact.external_id,
        contact.fields,
        contact.created_at,
        contact.updated_at,
    )


def contacts_create_missing(
    *, project: Project, identities: Sequence[tuple[str, str | None]]
) -> list[Contact]:
    """Creates, in one statement, an active contact for each `(email, external_id)` whose
    email and external id no active contact holds, and records their
    `sendrealm.contact.created` events in one more; returns the contacts it created.

    Identities it leaves out (invalid, taken, or repeated) are for `contact_upsert`, which
    says why."""
    if not identities:
        return []
    emails: dict[str, str | None] = {}
    external_ids: set[str] = set()
    for email, external_id in identities:
        try:
            normalised = email_normalised(project=project, email=email)
            _check_external_id(external_id)
        except ValidationFailed:
            continue
        if normalised in emails or (external_id is not None and external_id in external_ids):
            continue
        emails[normalised] = external_id
        if external_id is not None:
            external_ids.add(external_id)
    if not emails:
        return []
    now = clock.now()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            CREATE_MISSING_SQL,
            {
                "project_id": project.id,
                "now": now,
                "ids": [uuid.uuid4() for _ in emails],
                "emails": list(emails),
                "external_ids": list(emails.values()),
            },
        )
        created = [
            Contact(
                id=contact_id,
                project=project,
                email=email,
                external_id=external_id,
                fields={},
                created_at=now,
                updated_at=now,
                deleted_at=None,
            )
            for contact_id, email, external_id in cursor.fetchall()
        ]
        for contact in created:
            contact._state.adding = False
            contact._state.db = connection.alias
        system_events_emit(
            project=project,
            name="contact.created",
            events=[
                SystemEvent(
                    payload=_identity_payload(contact),
                    contact_id=contact.id,
                    email=contact.email,
                    external_id=contact.external_id,
                )
                for contact in created
            ],
        )
    return created


def contact_update(
    *,
    project: Project,
    contact_id: uuid.UUID | str,
    email: str | Missing = MISSING,
    fields: dict[str, Any] | None = None,
    external_id: str | Missing | None = MISSING,
) -> Contact:
    """Changes an active contact: a new email, merged `fields`, a new or cleared external id.

    The row is locked for the read-merge-write, so concurrent updates lose no field. An
    email or external id held by another active contact is a 409. Emits
    `sendrealm.contact.updated` when something changed.
    """
    normalised = email_normalised(project=project, email=email) if email is not MISSING else None
    changes = _check_fields(fields)
    if external_id is not MISSING:
        _check_external_id(external_id)
    try:
        with transaction.atomic():
            contact = contact_get_for_update(project=project, contact_id=contact_id)
            merged = merge_fields(contact.fields, changes)
            if merged != contact.fields:
                _check_fields_size(project, merged)
            updates: dict[str, Any] = {"fields": merged}
            if normalised is not None:
                updates["email"] = normalised
            if external_id is not MISSING:
                clears = external_id is None and contact.external_id is not None
                if clears and not updates.get("email", contact.email):
                    raise ValidationFailed.at(
                        "external_id", "A contact without an email needs its external_id."
                    )
                updates["external_id"] = external_id
            if model_update(contact, fields=updates):
                _emit(project, "contact.updated", contact)
            return contact
    except IntegrityError as error:
        raise _conflict_for(error) from None


def contact_delete(*, project: Project, contact_id: uuid.UUID | str) -> Contact:
    """Soft-deletes an active contact: its email and external id are free again. Families
    that keep rows about it react through `contacts.hooks` in the same transaction
    (audiences drop its memberships; topic subscriptions stay as a record)."""
    with transaction.atomic():
        contact = contact_get_for_update(project=project, contact_id=contact_id)
        contact.deleted_at = clock.now()
        contact.save(update_fields=["deleted_at", "updated_at"])
        for handler in contact_deleted_handlers():
            handler(contact=contact)
        return contact


def contacts_upsert_many(
    *,
    project: Project,
    candidates: Sequence[UpsertCandidate],
    by: str = "email",
    emit: bool = True,
) -> list[tuple[uuid.UUID, bool] | None]:
    """Creates or merges many contacts in one statement (PostgreSQL): per candidate, in
    order, `(contact_id, created)` when it wrote, None when the contact already held
    everything. Identities must be distinct and normalised, fields free of null values
    and within the project's bound (contact_upsert_matches says which are not).

    With `emit`, records `sendrealm.contact.created` / `.updated` for what changed, in
    the caller's transaction; a bulk writer that must not start automations passes
    False. An external id held by another contact raises IntegrityError."""
    if not candidates:
        return []
    identity = "external_id" if by == "external_id" else "email"
    # Rows locked in a stable order, so two bulk writers cannot deadlock on each other.
    order = sorted(range(len(candidates)), key=lambda i: getattr(candidates[i], identity) or "")
    now = clock.now()
    with binary_cursor() as cursor:
        cursor.execute(
            UPSERT_MANY_SQL.format(table=Contact._meta.db_table, identity=identity),
            {
                "project_id": project.id,
                "now": now,
                "ids": [uuid.uuid4() for _ in order],
                "emails": [candidates[i].email for i in order],
                "external_ids": [candidates[i].external_id for i in order],
                "fields": [candidates[i].fields_json for i in order],
            },
        )
        written = cursor.fetchall()
    position = {getattr(candidate, identity): i for i, candidate in enumerate(candidates)}
    results: list[tuple[uuid.UUID, bool] | None] = [None] * len(candidates)
    events: dict[str, list[SystemEvent]] = {"contact.created": [], "contact.updated": []}
    for contact_id, email, external_id, created in written:
        key = email if identity == "email" else external_id
        results[position[key]] = (contact_id, bool(created))
        if emit:
            name = "contact.created" if created else "contact.updated"
            events[name].append(
                SystemEvent(
                    payload={
                        "contact_id": str(contact_id),
                        "email": email,
                        "external_id": external_id,
                    },
                    contact_id=contact_id,
                    email=email,
                    external_id=external_id,
                )
            )
    for name, batch in events.items():
        system_events_emit(project=project, name=name, events=batch)
    return results


def contacts_lock_active(
    *, project: Project, contact_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, tuple[str | None, str | None]]:
    """Locks the active contacts among `contact_ids` until the caller's transaction ends
    (in id order, FOR NO KEY UPDATE as `contact_find_for_update` locks one) and returns
    their `(email, external_id)` by id. Bulk writers of memberships and subscriptions take
    it so that a contact cannot be deleted under them."""
    if not contact_ids:
        return {}
    with binary_cursor() as cursor:
        cursor.execute(
            # S608: the model's table name.
            f"SELECT id, email, external_id FROM {Contact._meta.db_table} "  # noqa: S608
            "WHERE project_id = %b AND id = ANY(%b) AND deleted_at IS NULL "
            "ORDER BY id FOR NO KEY UPDATE",
            [project.id, sorted(contact_ids)],
        )
        return {contact_id: (email, external_id) for contact_id, email, external_id in cursor}
