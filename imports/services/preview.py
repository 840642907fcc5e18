"""The preview of an import: the prepare of the prepared action `imports.commit`. It plans
every row against the current contacts (exact counts and change totals), keeps at most
five sample rows (invalid ones first) and stores each chunk's digest, which the commit
checks before it changes anything."""

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from config.api.errors import Conflict, NotFound
from config.runtime import clock
from imports.mapping import ColumnMapping, mapping_parsed
from imports.models import Import, ImportChunk, ImportStatus, RowStatus
from imports.selectors import import_get
from imports.services.planning import RowPlan, chunks_planned, mapped_of, no_changes
from tenancy.access import Access
from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction
from tenancy.preparedactions.registry import Operation
from tenancy.preparedactions.services import prepared_action_prepare

SAMPLE_SIZE = 5


@dataclass
class PlanSummary:
    """What planning every row came to: counts, change totals, the sample and the chunks."""

    record: Import
    mapping: ColumnMapping
    valid_rows: int = 0
    invalid_rows: int = 0
    changes: dict[str, int] = field(default_factory=no_changes)
    invalid_sample: list[RowPlan] = field(default_factory=list)
    valid_sample: list[RowPlan] = field(default_factory=list)
    chunks: list[ImportChunk] = field(default_factory=list)

    def add(self, plans: list[RowPlan]) -> None:
        """Counts a chunk's plans, in row order."""
        valid_status = RowStatus.VALID.value
        changes = self.changes
        valid = 0
        for plan in plans:
            if plan.status == valid_status:
                valid += 1
                for name, count in plan.counts.items():
                    changes[name] += count
                if len(self.valid_sample) < SAMPLE_SIZE:
                    self.valid_sample.append(plan)
            elif len(self.invalid_sample) < SAMPLE_SIZE:
                self.invalid_sample.append(plan)
        self.valid_rows += valid
        self.invalid_rows += len(plans) - valid

    @property
    def counts(self) -> list[dict[str, Any]]:
        return [
            {"status": RowStatus.VALID.value, "rows": self.valid_rows},
            {"status": RowStatus.INVALID.value, "rows": self.invalid_rows},
        ]

    @property
    def sample(self) -> list[dict[str, Any]]:
        """At most five rows, invalid ones first, each in row order."""
        chosen = (self.invalid_sample + self.valid_sample)[:SAMPLE_SIZE]
        return [self._sample_row(plan) for plan in chosen]

    def _sample_row(self, plan: RowPlan) -> dict[str, Any]:
        result = None
        if plan.status == RowStatus.VALID:
            result = {
                "action": plan.action,
                "identity": plan.identity,
                "resource_id": str(plan.contact_id) if plan.contact_id else None,
                "version": plan.version,
                "mapped": mapped_of(plan, self.mapping),
                "changes": plan.changes,
            }
        return {
            "row_number": plan.row.row_number,
            "status": plan.status,
            "error_code": plan.error_code,
            "result": result,
        }

    @property
    def effects(self) -> dict[str, Any]:
        return {
            "import_id": str(self.record.id),
            "valid_rows": self.valid_rows,
            "invalid_rows": self.invalid_rows,
            "automation_effects": self.record.automation_effects,
            "changes": dict(self.changes),
        }


def _summarised(record: Import, project: Project) -> PlanSummary:
    summary = PlanSummary(record=record, mapping=mapping_parsed(record.mapping))
    for chunk in chunks_planned(record=record, project=project):
        summary.add(chunk.plans)
        summary.chunks.append(
            ImportChunk(
                import_record=record,
                first_row=chunk.first_row,
                last_row=chunk.last_row,
                planned_rows=chunk.planned_rows,
                digest=chunk.digest,
            )
        )
    return summary


def import_previewable_checked(record: Import, project: Project) -> None:
    """409 unless the import can still be previewed (or committed from its preview)."""
    if record.status not in (ImportStatus.UPLOADED, ImportStatus.PREVIEWED):
        raise Conflict(f"The import is {record.status}; it cannot be previewed or committed.")
    if record.email_normalization != project.email_normalization:
        raise Conflict(
            "The project's email normalisation changed since this import was uploaded; "
            "upload it again."
        )


def import_commit_effects(*, project: Project, resource_id: str, access: Access) -> dict[str, Any]:
    """What committing the import would change (the operation's `effects`); stores nothing."""
    record = import_get(project=project, import_id=resource_id)
    if record is None:
        raise NotFound("No such import.")
    import_previewable_checked(record, project)
    return _summarised(record, project).effects


@dataclass(frozen=True)
class ImportPreview:
    """A preview as the API answers it."""

    record: Import
    prepared: PreparedAction
    summary: PlanSummary


def import_preview(
    *, project: Project, access: Access, import_id: uuid.UUID | str, operation: Operation
) -> ImportPreview:
    """Plans every row and prepares `operation` (`imports.commit`) with the plan's effects.
    A new preview replaces the previous one: its prepared action can no longer commit."""
    with transaction.atomic():
        # Locked for the whole plan: a commit or another preview waits for this one.
        record = Import.objects.select_for_update().filter(project=project, id=import_id).first()
        if record is None:
            raise NotFound("No such import.")
        import_previewable_checked(record, project)
        summary = _summarised(record, project)
        ImportChunk.objects.filter(import_record=record).delete()
        ImportChunk.objects.bulk_create(summary.chunks)
        prepared = prepared_action_prepare(
            project=project,
            access=access,
            operation=operation,
            resource_id=str(record.id),
            effects=summary.effects,
        )
        record.status = ImportStatus.PREVIEWED
        record.valid_rows = summary.valid_rows
        record.invalid_rows = summary.invalid_rows
        record.changes = dict(summary.changes)
        record.sample = summary.sample
        record.prepared_action_id = prepared.id
        record.previewed_at = clock.now()
        record.save()
    return ImportPreview(record=record, prepared=prepared, summary=summary)
