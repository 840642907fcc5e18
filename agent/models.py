"""The audit of agent tool calls."""

from django.db import models

from config.db.ids import uuid7


class ToolCall(models.Model):
    """One tool call over MCP: who made it, in which project, and how it ended."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # Plain ids, not foreign keys: the record outlives the key and the project, and an
    # unknown project id an agent sent is recorded as it was refused.
    api_key_id = models.UUIDField()
    user_id = models.IntegerField(null=True, blank=True)
    project_id = models.UUIDField(null=True, blank=True)
    tool = models.CharField(max_length=100)
    # `ok`, or the error code the call answered (`validation_error`, `forbidden`, ...).
    outcome = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    duration_ms = models.FloatField()
    created_at = models.DateTimeField()

    class Meta:
        # The table is partitioned by `created_at` (config/db/partitions.py, made in
        # migration 0002): its primary key in the database is (id, created_at), as
        # PostgreSQL requires of a partitioned table; `id` alone, a time-ordered UUID
        # (config/db/ids.py), is the key Django knows.
        indexes = [
            # Serves the console's list of a project's calls, newest first.
            models.Index(fields=["project_id", "-created_at"], name="agent_call_project_idx"),
            # Serves the console's default order and its outcome filter over recent calls.
            models.Index(fields=["-created_at"], name="agent_call_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} ({self.outcome})"
