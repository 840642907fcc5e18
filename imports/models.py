"""Contact imports: an uploaded file's rows, the import that previews and commits them, and
the commit's work items (chunks of rows on the work-queue kit)."""

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from config.runtime import clock
from config.workqueue.models import WorkItem, due_index, lease_index
from tenancy.models import Project, ProjectForeignKey, ProjectScopedModel


class ImportStatus(models.TextChoices):
    # Rows stored; no preview yet.
    UPLOADED = "uploaded"
    # A preview (the prepared action `imports.commit`) describes what a commit does.
    PREVIEWED = "previewed"
    # Executed: chunks are being applied by workers.
    COMMITTING = "committing"
    COMMITTED = "committed"
    # A chunk ran out of attempts; `last_error` says why (staff may requeue it).
    FAILED = "failed"


class ImportSource(models.TextChoices):
    CSV = "csv"
    JSON = "json"


class AutomationEffects(models.TextChoices):
    # The import's changes record no system events: no automation starts.
    SUPPRESS = "suppress"
    # Its changes record the system events an API call would (contact.created ...).
    TRIGGER = "trigger"


class RowStatus(models.TextChoices):
    VALID = "valid"
    INVALID = "invalid"


class RowError(models.TextChoices):
    MISSING_EMAIL = "missing_email"
    INVALID_EMAIL = "invalid_email"
    DUPLICATE_ROW = "duplicate_row"
    INVALID_VALUE = "invalid_value"


class Import(ProjectScopedModel):
    """An upload of contacts (CSV or JSON rows) with its mapping, and where it stands:
    uploaded, previewed (with the totals of its plan), committing, committed or failed."""

    # No index of its own: import_project_created_idx leads with it.
    project = ProjectForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="imports"
    )
    status = models.CharField(
        max_length=16, choices=ImportStatus.choices, default=ImportStatus.UPLOADED
    )
    source = models.CharField(max_length=8, choices=ImportSource.choices)
    filename = models.CharField(max_length=255, null=True, blank=True)
    # How the file was read: detected or given (CSV only).
    encoding = models.CharField(max_length=32, null=True, blank=True)
    delimiter = models.CharField(max_length=1, null=True, blank=True)
    # The header row (CSV) or the members the rows used (JSON), and column -> target.
    columns = models.JSONField(default=list)
    mapping = models.JSONField(default=dict)
    automation_effects = models.CharField(
        max_length=16, choices=AutomationEffects.choices, default=AutomationEffects.SUPPRESS
    )
    # The project's email normalisation the identities were computed under.
    email_normalization = models.CharField(max_length=16)
    # Distinct audience and topic names the rows name (bounded), for the plan's lookups.
    audience_names = models.JSONField(default=list)
    topic_names = models.JSONField(default=list)

    total_rows = models.PositiveIntegerField(default=0)
    # As of the last preview, else as of the upload.
    valid_rows = models.PositiveIntegerField(default=0)
    invalid_rows = models.PositiveIntegerField(default=0)

    # The last preview: its prepared action, the Import changes totals and the sample.
    prepared_action_id = models.UUIDField(null=True, blank=True)
    previewed_at = models.DateTimeField(null=True, blank=True)
    changes = models.JSONField(null=True, blank=True)
    sample = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)

    # The commit: rows with changes to apply, and how many are applied.
    commit_rows = models.PositiveIntegerField(default=0)
    committed_rows = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    committing_at = models.DateTimeField(null=True, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serves the cursor listing of a project's imports.
            models.Index(fields=["project", "created_at", "id"], name="import_project_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.filename or self.source} ({self.status})"

    @property
    def progress(self) -> float | None:
        """The share of the commit's rows applied (None before a commit)."""
        if self.status not in (
            ImportStatus.COMMITTING,
            ImportStatus.COMMITTED,
            ImportStatus.FAILED,
        ):
            return None
        if self.commit_rows == 0:
            return 1.0 if self.status == ImportStatus.COMMITTED else 0.0
        return round(self.committed_rows / self.commit_rows, 4)


class ImportRow(models.Model):
    """One data row after the mapping, as uploaded: its identity and the values it proposes.
    Unmapped columns are not kept, nor anything of a row found invalid at upload."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: the unique importrow_one_per_number leads with it.
    import_record = models.ForeignKey(
        Import,
        on_delete=models.CASCADE,
        db_index=False,
        related_name="rows",
        db_column="import_id",
    )
    # 1 is the first data row (after the header).
    row_number = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=RowStatus.choices)
    error_code = models.CharField(max_length=16, choices=RowError.choices, null=True, blank=True)
    # The normalised email (under the import's `email_normalization`), the external id.
    email = models.CharField(max_length=320, null=True, blank=True)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    # Field values to merge (empty cells left out), audience and topic names.
    fields = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    audiences = models.JSONField(default=list)
    topics = models.JSONField(default=list)

    class Meta:
        constraints = [
            # Serves every read of an import's rows: by row number ranges (chunks).
            models.UniqueConstraint(
                fields=["import_record", "row_number"], name="importrow_one_per_number"
            ),
        ]

    def __str__(self) -> str:
        return f"row {self.row_number}"


class ImportChunk(WorkItem):
    """A range of an import's rows (the unit of a commit, on the work-queue kit): the
    digest of its previewed plan, checked before the commit starts, and what applying it
    is worth on the import's progress."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: the unique importchunk_one_per_range leads with it.
    import_record = models.ForeignKey(
        Import,
        on_delete=models.CASCADE,
        db_index=False,
        related_name="chunks",
        db_column="import_id",
    )
    first_row = models.PositiveIntegerField()
    last_row = models.PositiveIntegerField()
    # Rows of the range whose plan has changes (what the chunk adds to `committed_rows`).
    planned_rows = models.PositiveIntegerField(default=0)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["import_record", "first_row"], name="importchunk_one_per_range"
            ),
        ]
        indexes = [
            # Serve the workers' claim: due chunks, and expired leases of dead workers.
            due_index("importchunk_due_idx"),
            lease_index("importchunk_lease_idx"),
        ]

    def __str__(self) -> str:
        return f"rows {self.first_row}-{self.last_row}"
