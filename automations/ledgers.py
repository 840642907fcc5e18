"""The automations' ledgers: rows that record what runs did, for a rule or a report,
rather than runs themselves. A contact's entry under a reentry rule (`AutomationEntry`),
and the counts the console's step funnel and the report read (`StepEntryCount`,
`ReportCount`), kept in the transaction of each change. Their foreign keys name the
runs' models by label, so this module needs none of automations/models.py, which
re-exports them (Django registers them as the app's models)."""

from django.db import models

from config.runtime import clock
from contacts.models import Contact


class AutomationEntry(models.Model):
    """That a contact entered an automation under a reentry rule: `once` (no correlation
    value) or `once_per_correlation` (one per value). Starting a run inserts this first,
    so the rule is a unique constraint, not a check; it outlives the run's retention."""

    id = models.BigAutoField(primary_key=True)
    automation = models.ForeignKey(
        "automations.Automation", on_delete=models.CASCADE, related_name="entries"
    )
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="+")
    correlation_value = models.CharField(max_length=500, null=True, blank=True)
    run = models.ForeignKey(
        "automations.AutomationRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        verbose_name_plural = "automation entries"
        constraints = [
            models.UniqueConstraint(
                fields=["automation", "contact"],
                condition=models.Q(correlation_value__isnull=True),
                name="automation_entry_once",
            ),
            models.UniqueConstraint(
                fields=["automation", "contact", "correlation_value"],
                condition=models.Q(correlation_value__isnull=False),
                name="automation_entry_once_per_correlation",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.automation_id} / {self.contact_id}"


# Shards of a step's entry count: a database session adds to the shard of its server
# process id, so workers advancing runs of one version at once rarely meet on a row.
STEP_ENTRY_SHARDS = 64


class StepEntryCount(models.Model):
    """How many live runs of a version entered one of its steps (a run's first visit: a
    loop back counts once), in shards summed by the reader. Added to by the engine's
    writes in the transaction that inserts the steps, so the console's per-step funnel
    reads these few rows instead of counting the timeline. Retention's purge of old runs
    does not take entries back."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: `step_entry_one_per_shard` leads with it.
    version = models.ForeignKey(
        "automations.AutomationVersion",
        on_delete=models.CASCADE,
        related_name="step_entries",
        db_index=False,
    )
    step_key = models.CharField(max_length=64)
    shard = models.PositiveSmallIntegerField()
    entered = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # The upsert of every count meets this key; leading with the version, it also
            # serves the funnel of a version (its rows, at most 64 per step).
            models.UniqueConstraint(
                fields=["version", "step_key", "shard"], name="step_entry_one_per_shard"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.step_key} of {self.version_id}: {self.entered}"


# Shards of the report's counts, as for the step entries: workers counting runs of one
# automation at once rarely meet on a row.
REPORT_SHARDS = 16


class ReportCount(models.Model):
    """The counts an automation's report reads (automations/services/report.py), per day of
    entry (UTC, of the run's `entered_at`), in shards summed by the reader: a run's row
    (`step_key` empty; `holdout` says which group), each step a run entered (its first
    visit), and each split branch taken (`branch_key`). Added to by every change of a live
    run (start, step, conversion) in that change's transaction (report_counts.py), so the
    report reads these rows, never the runs. Retention's purge of runs takes nothing back."""

    id = models.BigAutoField(primary_key=True)
    # No index of its own: `report_count_one_per_shard` leads with it.
    automation = models.ForeignKey(
        "automations.Automation",
        on_delete=models.CASCADE,
        related_name="report_counts",
        db_index=False,
    )
    day = models.DateField()
    holdout = models.BooleanField(default=False)
    step_key = models.CharField(max_length=64, default="", blank=True)
    branch_key = models.CharField(max_length=64, default="", blank=True)
    shard = models.PositiveSmallIntegerField()
    entered = models.BigIntegerField(default=0)
    completed = models.BigIntegerField(default=0)
    converted = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # Met by every upsert of counts; leading with the automation and the day, it
            # also serves the report's range of days.
            models.UniqueConstraint(
                fields=["automation", "day", "holdout", "step_key", "branch_key", "shard"],
                name="report_count_one_per_shard",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.automation_id} {self.day} {self.step_key}/{self.branch_key}"
