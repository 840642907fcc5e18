"""Reads of contacts. Every selector sees only active contacts, of the acting project (or,
for batch work across projects, of the projects it names)."""

import datetime as dt
import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Q, QuerySet

from config.api.jsonvalues import json_size
from config.db.bulk import rows_fetch
from config.db.cursor import binary_cursor
from contacts.models import Contact
from contacts.normalization import normalise_email
from tenancy.models import Project


def contact_list(*, project: Project) -> QuerySet[Contact]:
    """The project's active contacts."""
    return Contact.objects.filter(project=project, deleted_at__isnull=True)


_COLUMNS = [field.attname for field in Contact._meta.concrete_fields]
# One prepared statement: every API call and agent tool that names a contact reads it so,
# and building the same query through the ORM cost more than running it.
_GET_BY_ID = (
    f"SELECT {', '.join(_COLUMNS)} FROM {Contact._meta.db_table} "  # noqa: S608 (constants)
    "WHERE id = %b AND project_id = %b AND deleted_at IS NULL"
)


def contact_get(*, project: Project, contact_id: uuid.UUID | str) -> Contact | None:
    """An active contact by id; None when unknown, deleted, of another project or not a UUID."""
    try:
        pk = contact_id if isinstance(contact_id, uuid.UUID) else uuid.UUID(str(contact_id))
    except ValueError:
        return None
    rows = rows_fetch(_GET_BY_ID, [pk, project.id], prepare=True)
    return Contact.from_db(connection.alias, _COLUMNS, rows[0]) if rows else None


def contact_get_for_link(*, contact_id: uuid.UUID) -> Contact | None:
    """An active contact by id in whichever project holds it, with its project: for public
    pages whose signed token names the contact (the preference page). None when unknown or
    deleted."""
    return (
        Contact.objects.select_related("project")
        .filter(id=contact_id, deleted_at__isnull=True)
        .first()
    )


def contact_get_by_email(*, project: Project, email: str) -> Contact | None:
    """The active contact for an email in the project's normal form; None for an invalid one."""
    try:
        normalised = normalise_email(email, policy=project.email_normalization)
    except ValueError:
        return None
    return contact_list(project=project).filter(email=normalised).first()


def contact_get_by_external_id(*, project: Project, external_id: str) -> Contact | None:
    return contact_list(project=project).filter(external_id=external_id).first()


def contact_list_by_identities(
    *, wanted: Mapping[Any, tuple[Collection[Any], Collection[str], Collection[str]]]
) -> QuerySet[Contact]:
    """Active contacts of several projects in one query, for resolving a batch of events:
    `wanted` maps a project id to the (ids, external ids, emails) to match in it. One IN
    list per identity kind and project, not one OR branch per item: a batch of 100 plans
    three index scans instead of three hundred."""
    match = Q(pk__in=[])
    for project_id, (ids, external_ids, emails) in wanted.items():
        match |= Q(project_id=project_id) & (
            Q(id__in=ids) | Q(external_id__in=external_ids) | Q(email__in=emails)
        )
    return Contact.objects.filter(match, deleted_at__isnull=True)


def contact_resolve(
    *,
    project: Project,
    contact_id: uuid.UUID | str | None = None,
    external_id: str | None = None,
    email: str | None = None,
) -> Contact | None:
    """Identity resolution in the contract's order: the contact matched by `contact_id`,
    else by `external_id`, else by normalised `email`; None when none matches."""
    if contact_id is not None:
        contact = contact_get(project=project, contact_id=contact_id)
        if contact is not None:
            return contact
    if external_id is not None:
        contact = contact_get_by_external_id(project=project, external_id=external_id)
        if contact is not None:
            return contact
    if email is not None:
        return contact_get_by_email(project=project, email=email)
    return None


class UpsertCandidate(NamedTuple):
    """A contact to create or merge into, as a bulk writer (an import) proposes it: its
    identity (the normalised email, or the external id when there is no email) and the
    fields to merge, as a compact JSON object without null values."""

    email: str | None
    external_id: str | None
    fields_json: str


class UpsertedContact(NamedTuple):
    """The active contact an upsert leaves, as its statement returns it: what the API
    answers (contacts.api.serializers.contact_data reads it as it reads a Contact), without
    a model instance per request."""

    id: uuid.UUID
    email: str | None
    external_id: str | None
    fields: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    # An upsert's contact is active.
    deleted_at: None = None

    def contact(self, project: Project) -> Contact:
        """The same contact as a model instance of `project`, as the database holds it."""
        contact = Contact(
            id=self.id,
            project=project,
            email=self.email,
            external_id=self.external_id,
            fields=self.fields,
            created_at=self.created_at,
            updated_at=self.updated_at,
            deleted_at=None,
        )
        contact._state.adding = False
        contact._state.db = connection.alias
        return contact


class UpsertMatch(NamedTuple):
    """What upserting one candidate would do to the active contact its identity names."""

    contact_id: uuid.UUID | None
    # The contact's `updated_at`: any later change to the contact moves it.
    version: dt.datetime | None
    # The merge adds or changes a field, or sets another external id.
    fields_change: bool
    external_id_change: bool
    # The candidate's external id belongs to another active contact (an upsert is a 409).
    external_id_taken: bool
    # The merged fields would exceed the project's `contact_fields_limit_bytes`.
    too_large: bool


# One row per candidate, in order: the active contact its identity names, the merge of
# the candidate's fields into it, and the active contact that holds its external id. The
# size is first taken from jsonb's text, which spaces its separators and so is not
# shorter than compact JSON (a number jsonb writes in fewer digits than Python aside);
# only rows over the bound carry the merged text, to be measured exactly in Python.
_MATCH_SQL = """
SELECT c.id, c.updated_at, c.external_id,
       c.id IS NOT NULL AND (c.fields || u.fields) IS DISTINCT FROM c.fields,
       holder.id,
       CASE WHEN octet_length((COALESCE(c.fields, '{{}}'::jsonb) || u.fields)::text) > %(limit)s
            THEN (COALESCE(c.fields, '{{}}'::jsonb) || u.fields)::text END
FROM (
    SELECT n, email, external_id, fields::jsonb AS fields
    FROM unnest(%(n)b::int[], %(emails)b::varchar[], %(external_ids)b::varchar[],
                %(fields)b::text[]) AS t(n, email, external_id, fields)
) u
LEFT JOIN {table} c
    ON c.project_id = %(project_id)s AND c.deleted_at IS NULL AND c.{identity} = u.{identity}
LEFT JOIN {table} holder
    ON holder.project_id = %(project_id)s AND holder.deleted_at IS NULL
       AND holder.external_id = u.external_id
ORDER BY u.n
"""


def contact_upsert_matches(
    *, project: Project, candidates: Sequence[UpsertCandidate], by: str = "email"
) -> list[UpsertMatch]:
    """For each candidate, in order, what an upsert by `by` (`email` or `external_id`)
    would do to the project's active contacts: one query for the whole batch (PostgreSQL).

    The merge is contact_upsert's: fields key by key, the external id set when given."""
    if not candidates:
        return []
    identity = "external_id" if by == "external_id" else "email"
    with binary_cursor() as cursor:
        cursor.execute(
            _MATCH_SQL.format(table=Contact._meta.db_table, identity=identity),
            {
                "project_id": project.id,
                "limit": project.contact_fields_limit_bytes,
                "n": list(range(len(candidates))),
                "emails": [candidate.email for candidate in candidates],
                "external_ids": [candidate.external_id for candidate in candidates],
                "fields": [candidate.fields_json for candidate in candidates],
            },
        )
        rows = cursor.fetchall()
    matches = []
    for candidate, (contact_id, version, current_external_id, changed, holder, merged) in zip(
        candidates, rows, strict=True
    ):
        wanted = candidate.external_id
        matches.append(
            UpsertMatch(
                contact_id=contact_id,
                version=version,
                fields_change=bool(changed),
                external_id_change=(
                    contact_id is not None and wanted is not None and wanted != current_external_id
                ),
                external_id_taken=holder is not None and holder != contact_id,
                too_large=(
                    merged is not None
                    and json_size(json.loads(merged)) > project.contact_fields_limit_bytes
                ),
            )
        )
    return matches


def contact_field_keys_present(*, project: Project, keys: Collection[str]) -> set[str]:
    """The keys among `keys` that some active contact of the project has in its `fields`."""
    contacts = contact_list(project=project)
    return {key for key in keys if contacts.filter(fields__has_key=key).exists()}


def contact_ids_by_identities(
    *, project: Project, values: Collection[str], by: str = "email"
) -> dict[str, uuid.UUID]:
    """Active contacts' ids by normalised email (or external id with `by="external_id"`)."""
    identity = "external_id" if by == "external_id" else "email"
    found = contact_list(project=project).filter(**{f"{identity}__in": list(values)})
    return dict(found.values_list(identity, "id"))
