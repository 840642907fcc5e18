"""The mapping of an import's columns to contact targets, and what it makes of one row:
the identity, the values to merge, or why the row is invalid. Pure functions: the upload
calls them once per row."""

import math
from collections.abc import Mapping as MappingABC
from dataclasses import dataclass, field
from typing import Any

from config.api.errors import Issue, ValidationFailed
from config.api.jsonvalues import serialised, stored_json_issues, text_problem
from contacts.normalization import normalise_email
from imports.models import RowError

EMAIL = "email"
EXTERNAL_ID = "external_id"
AUDIENCE = "audience"
TOPIC = "topic"
FIELD_PREFIX = "fields."

MAX_COLUMN_LENGTH = 200
MAX_FIELD_NAME_LENGTH = 100
MAX_EXTERNAL_ID_LENGTH = 255
MAX_EMAIL_LENGTH = 320
MAX_NAME_LENGTH = 200


@dataclass(frozen=True)
class ColumnMapping:
    """A validated mapping: which column holds what."""

    email: str | None = None
    external_id: str | None = None
    # (column, field name)
    fields: tuple[tuple[str, str], ...] = ()
    audiences: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()

    @property
    def identity(self) -> str:
        """What names a row's contact: the email when one is mapped, else the external id."""
        return EMAIL if self.email is not None else EXTERNAL_ID

    @property
    def columns(self) -> list[str]:
        named = [self.email, self.external_id]
        return [
            *(column for column in named if column is not None),
            *(column for column, _ in self.fields),
            *self.audiences,
            *self.topics,
        ]


def mapping_parsed(raw: Any, *, path: str = "mapping") -> ColumnMapping:
    """The mapping of a request (`{column: target}`), or a 400 naming every problem."""
    if not isinstance(raw, MappingABC) or not raw:
        raise ValidationFailed.at(
            path, "Must be a JSON object of column -> target with at least one column."
        )
    issues: list[Issue] = []
    email: str | None = None
    external_id: str | None = None
    fields: list[tuple[str, str]] = []
    field_names: set[str] = set()
    audiences: list[str] = []
    topics: list[str] = []
    for column, target in raw.items():
        where = f"{path}.{column}"
        if not isinstance(column, str) or not 1 <= len(column) <= MAX_COLUMN_LENGTH:
            issues.append(Issue("invalid", where, "Column names are 1 to 200 characters."))
            continue
        if not isinstance(target, str):
            issues.append(Issue("invalid_type", where, "The target must be a string."))
            continue
        if target in (EMAIL, EXTERNAL_ID):
            if (email if target == EMAIL else external_id) is not None:
                issues.append(Issue("duplicate", where, f"Only one column may be `{target}`."))
            elif target == EMAIL:
                email = column
            else:
                external_id = column
        elif target == AUDIENCE:
            audiences.append(column)
        elif target == TOPIC:
            topics.append(column)
        elif target.startswith(FIELD_PREFIX):
            name = target[len(FIELD_PREFIX) :]
            if not 1 <= len(name) <= MAX_FIELD_NAME_LENGTH or text_problem(name):
                issues.append(
                    Issue("invalid", where, "A field name is 1 to 100 characters after `fields.`.")
                )
            elif name in field_names:
                issues.append(Issue("duplicate", where, f"Only one column may be `{target}`."))
            else:
                field_names.add(name)
                fields.append((column, name))
        else:
            issues.append(
                Issue(
                    "invalid_choice",
                    where,
                    "The target must be `email`, `external_id`, `fields.<name>`, `audience` "
                    "or `topic`.",
                )
            )
    if not issues and email is None and external_id is None:
        issues.append(
            Issue(
                "identity_required",
                path,
                "Map a column to `email` or `external_id`: it names each row's contact.",
            )
        )
    if issues:
        raise ValidationFailed("The mapping is not valid.", issues=issues)
    return ColumnMapping(
        email=email,
        external_id=external_id,
        fields=tuple(fields),
        audiences=tuple(audiences),
        topics=tuple(topics),
    )


def unknown_columns_issues(
    mapping: ColumnMapping, present: set[str], *, path: str = "mapping"
) -> list[Issue]:
    """An issue per mapped column the data does not have."""
    return [
        Issue(
            "unknown_column",
            f"{path}.{column}",
            "The data has no column of this name (the first row of a CSV file is its header).",
        )
        for column in mapping.columns
        if column not in present
    ]


@dataclass
class MappedRow:
    """One row after the mapping: valid (with what it proposes) or invalid (with a code)."""

    error_code: str | None = None
    email: str | None = None
    external_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    audiences: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.error_code is None


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _name(value: Any) -> str | None:
    """An audience or topic name as given, trimmed; None for one that cannot be a name."""
    if not isinstance(value, str):
        return None
    name = value.strip()
    if len(name) > MAX_NAME_LENGTH or text_problem(name):
        return None
    return name


def row_mapped(
    values: MappingABC[str, Any], mapping: ColumnMapping, *, email_policy: str, typed: bool
) -> MappedRow:
    """What `values` (column -> cell) propose under `mapping`. CSV cells are text
    (`typed=False`: trimmed, kept as strings); JSON rows keep their JSON values. An empty
    cell (or null) proposes nothing. The first problem found makes the row invalid."""
    row = MappedRow()
    if mapping.email is not None:
        raw = values.get(mapping.email)
        if _empty(raw):
            return MappedRow(error_code=RowError.MISSING_EMAIL)
        if not isinstance(raw, str) or len(raw) > MAX_EMAIL_LENGTH:
            return MappedRow(error_code=RowError.INVALID_EMAIL)
        try:
            row.email = normalise_email(raw, policy=email_policy)
        except ValueError:
            return MappedRow(error_code=RowError.INVALID_EMAIL)
    if mapping.external_id is not None:
        raw = values.get(mapping.external_id)
        if isinstance(raw, int) and not isinstance(raw, bool) and typed:
            raw = str(raw)
        if not _empty(raw):
            if not isinstance(raw, str):
                return MappedRow(error_code=RowError.INVALID_VALUE)
            external_id = raw if typed else raw.strip()
            if len(external_id) > MAX_EXTERNAL_ID_LENGTH or text_problem(external_id):
                return MappedRow(error_code=RowError.INVALID_VALUE)
            row.external_id = external_id
        elif mapping.email is None:
            # The external id names the contact: without one the row names nobody.
            return MappedRow(error_code=RowError.INVALID_VALUE)
    for column, name in mapping.fields:
        value = values.get(column)
        if _empty(value):
            continue
        if typed:
            if isinstance(value, float) and not math.isfinite(value):
                return MappedRow(error_code=RowError.INVALID_VALUE)
            if stored_json_issues(value):
                return MappedRow(error_code=RowError.INVALID_VALUE)
            row.fields[name] = value
        else:
            text = str(value)
            if text_problem(text):
                return MappedRow(error_code=RowError.INVALID_VALUE)
            row.fields[name] = text.strip()
    for columns, names in ((mapping.audiences, row.audiences), (mapping.topics, row.topics)):
        for column in columns:
            value = values.get(column)
            if _empty(value):
                continue
            named = _name(value)
            if named is None:
                return MappedRow(error_code=RowError.INVALID_VALUE)
            if named.lower() not in {known.lower() for known in names}:
                names.append(named)
    return row


def fields_json(fields: dict[str, Any]) -> str:
    """The compact JSON text of a row's fields, as stored and as merged."""
    return serialised(fields)
