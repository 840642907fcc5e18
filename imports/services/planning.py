"""The plan of an import: what each row would change, computed in chunks of rows against
the project's current contacts (one query per kind of thing per chunk, never a query per
row), and a digest of each chunk's plan.

Preview, the check before a commit and the commit itself all plan with this module, so
they cannot disagree on what a row means: the preview stores each chunk's digest, the
commit plans every chunk again and starts only when every digest is unchanged.
"""

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from config.runtime import clock
from contacts.audiences.models import Audience
from contacts.audiences.selectors import audiences_by_names, memberships_existing
from contacts.selectors import (
    UpsertCandidate,
    UpsertMatch,
    contact_field_keys_present,
    contact_upsert_matches,
)
from contacts.topics.models import Topic
from contacts.topics.selectors import subscriptions_existing, topics_by_names
from imports import conf
from imports.mapping import ColumnMapping, mapping_parsed
from imports.models import Import, RowError, RowStatus
from imports.selectors import StoredRow, import_rows_between
from tenancy.models import Project

CONTACTS_CREATED = "contacts_created"
CONTACTS_UPDATED = "contacts_updated"
PROPERTIES_CREATED = "properties_created"
AUDIENCES_CREATED = "audiences_created"
MEMBERSHIPS_CREATED = "memberships_created"
MEMBERSHIPS_UPDATED = "memberships_updated"
SUBSCRIPTIONS_CREATED = "subscriptions_created"
SUBSCRIPTIONS_UPDATED = "subscriptions_updated"
# The members of the spec's Import changes object, in its order.
CHANGES = (
    CONTACTS_CREATED,
    CONTACTS_UPDATED,
    PROPERTIES_CREATED,
    AUDIENCES_CREATED,
    MEMBERSHIPS_CREATED,
    MEMBERSHIPS_UPDATED,
    SUBSCRIPTIONS_CREATED,
    SUBSCRIPTIONS_UPDATED,
)

CREATE, UPDATE, SKIP = "create", "update", "skip"


def no_changes() -> dict[str, int]:
    return dict.fromkeys(CHANGES, 0)


@dataclass(slots=True)
class RowPlan:
    """What one row would do. `counts` counts the mutations by kind (a row joining two
    audiences creates two memberships); `changes` names the kinds, each once."""

    row: StoredRow
    status: str
    error_code: str | None = None
    action: str | None = None
    contact_id: uuid.UUID | None = None
    version: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changes(self) -> list[str]:
        return [name for name in CHANGES if self.counts.get(name)]

    @property
    def identity(self) -> str | None:
        return self.row.email if self.row.email is not None else self.row.external_id

    def digest_line(self) -> str:
        # `counts` holds non-zero counts only, in CHANGES order: its repr is canonical.
        return (
            f"{self.row.row_number}|{self.status}|{self.error_code}|{self.action}|"
            f"{self.contact_id}|{self.version}|{self.counts}\n"
        )


_VALID = RowStatus.VALID.value


def _invalid(row: StoredRow, code: str) -> RowPlan:
    return RowPlan(row=row, status=RowStatus.INVALID, error_code=code)


class Planner:
    """Plans an import's rows chunk by chunk against the project's current state.

    `first_claims` (preview and the commit's check) counts a new property or audience on
    the first row that names it, across chunks in order; the commit's own chunks run
    alone and leave that out (creating an audience twice is a no-op anyway)."""

    def __init__(self, *, record: Import, project: Project, first_claims: bool = True) -> None:
        self.record = record
        self.project = project
        self.mapping: ColumnMapping = mapping_parsed(record.mapping)
        self.by = self.mapping.identity
        self.first_claims = first_claims
        self.audiences: dict[str, Audience] = audiences_by_names(
            project=project, names=record.audience_names
        )
        self.topics: dict[str, Topic] = topics_by_names(project=project, names=record.topic_names)
        names = [name for _, name in self.mapping.fields]
        # Field names no contact has yet and no earlier row claimed: the properties a row
        # may still create. Empty after the first rows that set them, so later rows need
        # not read their fields at all.
        self.open_keys: set[str] = (
            set(names) - contact_field_keys_present(project=project, keys=names)
            if first_claims
            else set()
        )
        self.claimed_audiences: set[str] = set()

    def audiences_known(self, audiences: dict[str, Audience]) -> None:
        """Adds audiences made since the planner started (the commit ensures them)."""
        self.audiences.update(audiences)

    def plan(self, rows: list[StoredRow]) -> list[RowPlan]:
        """The plans of `rows` (one chunk, in row order)."""
        valid_status = RowStatus.VALID.value
        valid = [row for row in rows if row.status == valid_status]
        matches = contact_upsert_matches(
            project=self.project,
            candidates=[
                UpsertCandidate(row.email, row.external_id, row.fields_json) for row in valid
            ],
            by=self.by,
        )
        contact_ids = {m.contact_id for m in matches if m.contact_id is not None}
        members: set[tuple[uuid.UUID, uuid.UUID]] = set()
        if self.mapping.audiences:
            members = memberships_existing(
                audience_ids=self._ids(valid, "audiences", self.audiences),
                contact_ids=contact_ids,
            )
        subscribed: set[tuple[uuid.UUID, uuid.UUID]] = set()
        if self.mapping.topics:
            subscribed = subscriptions_existing(
                topic_ids=self._ids(valid, "topics", self.topics), contact_ids=contact_ids
            )
        if len(valid) == len(rows):
            return [
                self._row_plan(row, match, members, subscribed)
                for row, match in zip(rows, matches, strict=True)
            ]
        # The matches follow the valid rows, in order.
        next_match = iter(matches).__next__
        return [
            self._row_plan(row, next_match(), members, subscribed)
            if row.status == valid_status
            else _invalid(row, row.error_code or RowError.INVALID_VALUE)
            for row in rows
        ]

    def _ids(
        self, rows: list[StoredRow], kind: str, known: dict[str, Audience] | dict[str, Topic]
    ) -> set[uuid.UUID]:
        ids: set[uuid.UUID] = set()
        for row in rows:
            for name in getattr(row, kind):
                found = known.get(name.lower())
                if found is not None:
                    ids.add(found.id)
        return ids

    def _row_plan(
        self,
        row: StoredRow,
        match: UpsertMatch,
        members: set[tuple[uuid.UUID, uuid.UUID]],
        subscribed: set[tuple[uuid.UUID, uuid.UUID]],
    ) -> RowPlan:
        # What makes a valid row unusable against the current state: its external id
        # belongs to another contact, it names a topic the project does not have, or the
        # merged fields would exceed the project's bound.
        if match.external_id_taken or match.too_large:
            return _invalid(row, RowError.INVALID_VALUE)
        contact_id = match.contact_id
        if not (row.audiences or row.topics or self.open_keys):
            # The common row: a contact and its fields only.
            if contact_id is None:
                return self._planned(row, match, CREATE, {CONTACTS_CREATED: 1})
            if match.fields_change or match.external_id_change:
                return self._planned(row, match, UPDATE, {CONTACTS_UPDATED: 1})
            return self._planned(row, match, SKIP, {})
        topics = [self.topics.get(name.lower()) for name in row.topics]
        if None in topics:
            return _invalid(row, RowError.INVALID_VALUE)
        counts = no_changes()
        if contact_id is None:
            counts[CONTACTS_CREATED] = 1
        elif match.fields_change or match.external_id_change:
            counts[CONTACTS_UPDATED] = 1
        if self.first_claims and self.open_keys and row.fields_json != "{}":
            new_keys = self.open_keys & set(json.loads(row.fields_json))
            if new_keys:
                counts[PROPERTIES_CREATED] = len(new_keys)
                self.open_keys -= new_keys
        for name in row.audiences:
            key = name.lower()
            audience = self.audiences.get(key)
            if audience is None:
                if self.first_claims and key not in self.claimed_audiences:
                    self.claimed_audiences.add(key)
                    counts[AUDIENCES_CREATED] += 1
                counts[MEMBERSHIPS_CREATED] += 1
            elif contact_id is None or (audience.id, contact_id) not in members:
                counts[MEMBERSHIPS_CREATED] += 1
        for topic in topics:
            assert topic is not None
            # An existing choice, `unsubscribed` included, is kept: imports never override
            # consent. Without one, `subscribed` is recorded.
            if contact_id is None or (topic.id, contact_id) not in subscribed:
                counts[SUBSCRIPTIONS_CREATED] += 1
        if counts[CONTACTS_CREATED]:
            action = CREATE
        elif any(counts.values()):
            action = UPDATE
        else:
            action = SKIP
        return self._planned(
            row, match, action, {name: count for name, count in counts.items() if count}
        )

    def _planned(
        self, row: StoredRow, match: UpsertMatch, action: str, counts: dict[str, int]
    ) -> RowPlan:
        version = match.version
        return RowPlan(
            row,
            _VALID,
            None,
            action,
            match.contact_id,
            clock.iso_utc(version) if version is not None else None,
            counts,
        )


@dataclass
class ChunkPlan:
    """The plans of one chunk of rows and their digest."""

    first_row: int
    last_row: int
    plans: list[RowPlan]
    digest: str

    @property
    def planned_rows(self) -> int:
        """Rows that change something (what a commit applies)."""
        return sum(1 for plan in self.plans if plan.counts)


def chunk_ranges(total_rows: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """The row ranges of an import's chunks: 1..size, size+1..2*size, ..."""
    size = size or conf.chunk_rows()
    for first in range(1, total_rows + 1, size):
        yield first, min(first + size - 1, total_rows)


def digest_of(plans: list[RowPlan]) -> str:
    # One update with every line: the same digest as a line at a time, in fewer calls.
    return hashlib.blake2b(
        "".join([plan.digest_line() for plan in plans]).encode(), digest_size=16
    ).hexdigest()


def chunks_planned(*, record: Import, project: Project) -> Iterator[ChunkPlan]:
    """Plans the whole import, chunk by chunk in row order: one chunk's rows in memory at
    a time."""
    planner = Planner(record=record, project=project)
    for first, last in chunk_ranges(record.total_rows):
        plans = planner.plan(import_rows_between(record=record, first=first, last=last))
        yield ChunkPlan(first_row=first, last_row=last, plans=plans, digest=digest_of(plans))


def mapped_of(plan: RowPlan, mapping: ColumnMapping) -> dict[str, Any]:
    """The row's proposed data after the mapping (the Row plan's `mapped`): the members
    the mapping names, with values of fields whose names suggest credentials masked."""
    row = plan.row
    mapped: dict[str, Any] = {}
    if mapping.email is not None:
        mapped["email"] = row.email
    if mapping.external_id is not None:
        mapped["external_id"] = row.external_id
    if mapping.fields:
        fields = json.loads(row.fields_json)
        mapped["fields"] = {
            key: "[redacted]" if _secret_like(key) else value for key, value in fields.items()
        }
    if mapping.audiences:
        mapped["audiences"] = list(row.audiences)
    if mapping.topics:
        mapped["topics"] = list(row.topics)
    return mapped


_SECRET_WORDS = ("password", "passwd", "secret", "token", "api_key", "apikey", "private_key")


def _secret_like(name: str) -> bool:
    lowered = name.lower().replace("-", "_")
    return any(word in lowered for word in _SECRET_WORDS)
