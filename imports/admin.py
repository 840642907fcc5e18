"""Staff console: imports with their counts, progress and preview sample, and their chunks
(the commit's work items) with requeue for those that ran out of attempts."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.safestring import SafeString

from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json
from config.workqueue.admin import WorkQueueAdmin
from imports.models import Import, ImportChunk
from imports.services.commit import import_chunks_requeue


class ImportChunkInline(ReadOnlyInline):
    model = ImportChunk
    fields = ("first_row", "last_row", "planned_rows", "status", "attempts", "last_error")
    readonly_fields = fields
    ordering = ("first_row",)


@admin.register(Import)
class ImportAdmin(ReadOnlyModelAdmin):
    """Read-only: imports change through the API (upload, preview, commit)."""

    list_display = [
        "id",
        "filename",
        "status",
        "project",
        "total_rows",
        "valid_rows",
        "invalid_rows",
        "progress_shown",
        "created_at",
    ]
    list_filter = ["status", "source"]
    list_select_related = ["project"]
    search_fields = ["=id", "filename"]
    raw_id_fields = ["project"]
    readonly_fields = (
        "id",
        "project",
        "status",
        "source",
        "filename",
        "encoding",
        "delimiter",
        "automation_effects",
        "mapping_shown",
        "total_rows",
        "valid_rows",
        "invalid_rows",
        "changes_shown",
        "sample_shown",
        "prepared_action_id",
        "previewed_at",
        "commit_rows",
        "committed_rows",
        "progress_shown",
        "committing_at",
        "committed_at",
        "last_error",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields
    inlines = [ImportChunkInline]

    @admin.display(description="progress")
    def progress_shown(self, obj: Import) -> str:
        progress = obj.progress
        if progress is None:
            return "-"
        return f"{obj.committed_rows} of {obj.commit_rows} rows ({progress:.0%})"

    @admin.display(description="mapping")
    def mapping_shown(self, obj: Import) -> SafeString:
        return pretty_json(obj.mapping)

    @admin.display(description="changes (last preview)")
    def changes_shown(self, obj: Import) -> SafeString | str:
        return pretty_json(obj.changes) if obj.changes is not None else "-"

    @admin.display(description="sample (last preview)")
    def sample_shown(self, obj: Import) -> SafeString | str:
        return pretty_json(obj.sample) if obj.sample is not None else "-"


@admin.register(ImportChunk)
class ImportChunkAdmin(WorkQueueAdmin):
    """The commit's work items; a chunk that ran out of attempts can be requeued."""

    list_display = ["id", "import_record", "first_row", "last_row", "status", "attempts"]
    list_filter = ["status", "error_code"]
    list_select_related = ["import_record"]
    search_fields = ["=import_record__id"]
    raw_id_fields = ["import_record"]
    readonly_fields = (
        "import_record",
        "first_row",
        "last_row",
        "planned_rows",
        "digest",
        "status",
        "attempts",
        "next_attempt_at",
        "lease_expires_at",
        "error_code",
        "last_error",
        "created_at",
    )
    fields = readonly_fields
    item, items = "chunk", "chunks"

    def requeue_rows(self, request: HttpRequest, ids: list[Any]) -> int:
        return import_chunks_requeue(ids=ids)
