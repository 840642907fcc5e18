"""Automations: versioned definitions (a trigger and a graph of steps), and the runs that
carry one contact through a published version, with their step timeline and waits.

The engine that executes runs works on these tables: it finds active automations by
their trigger event, starts runs (one per automation and trigger event, and at most one
per contact, or per contact and correlation value, where the reentry rule says so),
records every step it takes on a row whose unique key makes a send happen at most once,
and parks runs on wait rows that event processing matches and a sweep times out.
"""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

# Defined beside the runs, served from here as the app's models.
from automations.ledgers import REPORT_SHARDS as REPORT_SHARDS
from automations.ledgers import STEP_ENTRY_SHARDS as STEP_ENTRY_SHARDS
from automations.ledgers import AutomationEntry as AutomationEntry
from automations.ledgers import ReportCount as ReportCount
from automations.ledgers import StepEntryCount as StepEntryCount
from config.db.versions import version_constraints
from config.runtime import clock
from config.workqueue.models import WorkItem, due_index, lease_index
from contacts.models import Contact
from messaging.models import Email
from tenancy.models import Project, ProjectForeignKey


class AutomationStatus(models.TextChoices):
    DRAFT = "draft"
    ACTIVE = "active"
    PAUSED = "paused"
    ARCHIVED = "archived"


class AutomationVersionState(models.TextChoices):
    DRAFT = "draft"
    PUBLISHED = "published"
    SUPERSEDED = "superseded"


class Automation(models.Model):
    """A named automation of a project. Its definition lives in versions: at most one draft
    (what edits change) and at most one published version (what new runs follow)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = ProjectForeignKey(Project, on_delete=models.CASCADE, related_name="automations")
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    status = models.CharField(
        max_length=16, choices=AutomationStatus.choices, default=AutomationStatus.DRAFT
    )
    # Kept by the services under the automation's row lock, beside the versions' own
    # partial unique constraints, so answers and the engine read them without a search.
    current_draft_version = models.ForeignKey(
        "AutomationVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    current_published_version = models.ForeignKey(
        "AutomationVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The published version's trigger event, copied at publish so event processing finds
    # the automations an event starts without reading definitions.
    trigger_event = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    updated_at = models.DateTimeField(default=clock.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serves the cursor listing of a project's automations.
            models.Index(
                fields=["project", "created_at", "id"],
                condition=models.Q(deleted_at__isnull=True),
                name="automation_project_idx",
            ),
            # Serves event processing: the active automations an event name triggers.
            models.Index(
                fields=["project", "trigger_event"],
                condition=models.Q(status=AutomationStatus.ACTIVE, deleted_at__isnull=True),
                name="automation_trigger_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AutomationVersion(models.Model):
    """One revision of an automation's definition (and the editor's layout of it).
    Published and superseded versions never change."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: autversion_list_idx and the unique
    # automation_version_number_unique lead with it.
    automation = models.ForeignKey(
        Automation, on_delete=models.CASCADE, db_index=False, related_name="versions"
    )
    version_number = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=AutomationVersionState.choices)
    definition = models.JSONField(encoder=DjangoJSONEncoder)
    # Whatever the editor sends (node positions, zoom): stored and answered as given.
    editor_layout = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    restored_from_version = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)
    updated_at = models.DateTimeField(default=clock.now)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = version_constraints(
            parent="automation",
            number_name="automation_version_number_unique",
            prefix="automation",
            draft=AutomationVersionState.DRAFT,
            published=AutomationVersionState.PUBLISHED,
        )
        indexes = [
            # Serves the cursor listing of an automation's versions.
            models.Index(fields=["automation", "created_at", "id"], name="autversion_list_idx"),
        ]

    def __str__(self) -> str:
        return f"v{self.version_number} ({self.state})"


class RunStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    # Held out of the automation (`settings.holdout_percent`): it takes no step, only its
    # conversion is tracked (automations/services/goals.py).
    HOLDOUT = "holdout"


# A run in one of these is over: it takes no more steps (a holdout run never takes one;
# a finished run may still convert).
FINISHED_RUN_STATUSES = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELED,
    RunStatus.HOLDOUT,
)


class ExecutionMode(models.TextChoices):
    LIVE = "live"
    TEST = "test"


class TerminalReason(models.TextChoices):
    COMPLETED = "completed"
    EXITED = "exited"
    CANCELED = "canceled"
    FAILED = "failed"
    ARCHIVED = "archived"
    # The run converted (its goal event) and the version says `exit_on_goal`.
    CONVERTED = "converted"


class IdentityType(models.TextChoices):
    CONTACT_ID = "contact_id"
    EXTERNAL_ID = "external_id"
    EMAIL = "email"


class AutomationRun(models.Model):
    """One contact's way through one published version, started by one event (or a test
    run on a virtual clock). `status` is where it stands; `current_step_key` is the step the
    engine takes next (or waits in)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = ProjectForeignKey(Project, on_delete=models.CASCADE, related_name="automation_runs")
    # No index of its own: `run_list_idx` and `run_counts_idx` lead with it.
    automation = models.ForeignKey(
        Automation, on_delete=models.CASCADE, related_name="runs", db_index=False
    )
    version = models.ForeignKey(AutomationVersion, on_delete=models.CASCADE, related_name="runs")
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="automation_runs"
    )
    # The trigger event by id, not by foreign key: events are deleted by their own
    # retention, runs by theirs. Its name and payload are kept for conditions and templates.
    trigger_event_id = models.UUIDField(null=True, blank=True)
    trigger_event_name = models.CharField(max_length=200)
    trigger_payload = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    resolved_identity_type = models.CharField(
        max_length=16, choices=IdentityType.choices, null=True, blank=True
    )
    resolved_identity_value = models.CharField(max_length=320, null=True, blank=True)
    # `settings.correlation_key` of the version and its value in the trigger payload.
    correlation_key = models.CharField(max_length=200, null=True, blank=True)
    correlation_value = models.CharField(max_length=500, null=True, blank=True)
    execution_mode = models.CharField(
        max_length=8, choices=ExecutionMode.choices, default=ExecutionMode.LIVE
    )
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.PENDING)
    current_step_key = models.CharField(max_length=64, null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # When the run ended, whatever the end (`terminal_reason` says which).
    completed_at = models.DateTimeField(null=True, blank=True)
    # Test runs only: the run's own clock, which waits advance instead of sleeping.
    virtual_now = models.DateTimeField(null=True, blank=True)
    terminal_reason = models.CharField(
        max_length=16, choices=TerminalReason.choices, null=True, blank=True
    )
    completed_step_key = models.CharField(max_length=64, null=True, blank=True)
    # Set by cancel; the engine stops at its next step boundary and sets `canceled_at`.
    cancellation_requested_at = models.DateTimeField(null=True, blank=True)
    cancellation_reason = models.CharField(max_length=500, null=True, blank=True)
    canceled_at = models.DateTimeField(null=True, blank=True)
    # When the contact entered: the trigger event's acceptance (not when a worker got to
    # it), where the goal's `within` counts from. Null on runs made before goals existed.
    entered_at = models.DateTimeField(null=True, blank=True)
    # The goal event's acceptance time, and the event: set once (automations/services/goals.py).
    converted_at = models.DateTimeField(null=True, blank=True)
    conversion_event_id = models.UUIDField(null=True, blank=True)
    # Test runs only: whether the contact would get a holdout run live (null: a live run,
    # or a test by an address no contact has yet, whose id a live run would make).
    would_be_held_out = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)
    updated_at = models.DateTimeField(default=clock.now)

    class Meta:
        constraints = [
            # An event delivered twice (ingest is at-least-once) starts one run per
            # automation: starting is an insert that meets this index.
            models.UniqueConstraint(
                fields=["automation", "trigger_event_id"],
                condition=models.Q(
                    trigger_event_id__isnull=False, execution_mode=ExecutionMode.LIVE
                ),
                name="run_one_per_trigger_event",
            ),
        ]
        indexes = [
            # Serves the cursor listing of an automation's runs (and its filters).
            models.Index(fields=["automation", "created_at", "id"], name="run_list_idx"),
            # Serves `run_counts`: live runs of an automation grouped by status.
            models.Index(fields=["automation", "execution_mode", "status"], name="run_counts_idx"),
            # Serve the retention purge per project: finished live runs by when they ended,
            # test runs (whose times are virtual) by when they were made.
            models.Index(
                fields=["project", "completed_at"],
                condition=models.Q(completed_at__isnull=False, execution_mode=ExecutionMode.LIVE),
                name="run_purge_live_idx",
            ),
            models.Index(
                fields=["project", "created_at"],
                condition=models.Q(execution_mode=ExecutionMode.TEST),
                name="run_purge_test_idx",
            ),
            # Serves the check before a partition of the steps is dropped: the runs started
            # in its period that are still kept (automations/services/retention.py).
            models.Index(fields=["created_at"], name="run_started_period_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.trigger_event_name} ({self.status})"

    @property
    def correlation(self) -> dict[str, str] | None:
        if self.correlation_key is None:
            return None
        return {"key": self.correlation_key, "value": self.correlation_value or ""}


class StepType(models.TextChoices):
    SEND_EMAIL = "send_email"
    SEND_PUSH = "send_push"
    WAIT = "wait"
    WAIT_FOR_EVENT = "wait_for_event"
    BRANCH = "branch"
    # A deterministic share of contacts per branch (automations/services/splits.py).
    SPLIT = "split"
    UPDATE_CONTACT = "update_contact"
    EXIT = "exit"


class StepStatus(models.TextChoices):
    RUNNING = "running"
    WAITING = "waiting"
    # A send in the contact's quiet hours, waiting for their end (`resume_at`).
    DEFERRED = "deferred"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


class RunStep(models.Model):
    """One step a run took: a row of its timeline. `visit` counts the times the run came
    to this step (a loop through a wait comes back), so (run, step_key, visit) names one
    execution: the engine inserts it before acting, and a task delivered twice meets the
    unique key instead of sending twice.

    The table is partitioned by the run's start (`run_created_at`, config/db/partitions.py,
    made in migration 0005), so a run's whole timeline lives in one partition: its primary
    key in the database is (id, run_created_at), and each unique key holds that column too,
    as PostgreSQL requires of a partitioned table. A run has one start, so the keys are as
    unique as before. The engine reads and updates a run's steps by it, in one partition."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: `run_step_once_per_visit` and `run_step_timeline_idx` lead with
    # it. Every index here is written by each step a run takes.
    run = models.ForeignKey(
        AutomationRun, on_delete=models.CASCADE, related_name="steps", db_index=False
    )
    # The run's `created_at`, copied at insert: the partition key. Every insert sets it
    # from the run (the engine's `_take`; raw inserts copy `created_at` of the run).
    run_created_at = models.DateTimeField()
    step_key = models.CharField(max_length=64)
    visit = models.PositiveIntegerField(default=1)
    type = models.CharField(max_length=16, choices=StepType.choices)
    status = models.CharField(max_length=16, choices=StepStatus.choices, default=StepStatus.RUNNING)
    # Which way the step went: `then`/`else` for a branch, `event`/`timeout` for a
    # wait_for_event (conditions read it as `steps.<key>.outcome`), the branch's key for
    # a split (a step key's length).
    outcome = models.CharField(max_length=64, null=True, blank=True)
    started_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    email = models.ForeignKey(
        Email,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="automation_steps",
        # A foreign key to the emails table, partitioned by time, must name its whole
        # primary key (id, created_at); Django's `on_delete` clears it when the email goes
        # (its index serves that). Dropping a partition of steps leaves emails alone.
        db_constraint=False,
    )
    # The push message a send_push step made (push messages keep their own table).
    push_id = models.UUIDField(null=True, blank=True)
    # A send deferred by quiet hours: when it goes (the end of the window); kept once sent.
    resume_at = models.DateTimeField(null=True, blank=True)
    # Test runs only: what a send step would have sent (subject/html/text or
    # title/body/data, and the sender) and the fields an update_contact would have set.
    rendered = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    # The step's place in the run's timeline (1, 2, ...): steps taken in one advance share
    # a clock reading, and a test run's times are virtual.
    sequence = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        constraints = [
            # A step executes once: (run, step_key, visit), with the run's one start.
            models.UniqueConstraint(
                fields=["run", "step_key", "visit", "run_created_at"],
                name="run_step_once_per_visit",
            ),
            # An email is sent for at most one step (the email is made by its step, in the
            # step's run); also serves the steps of an email (its deletion sets them null).
            models.UniqueConstraint(
                fields=["email", "run_created_at"],
                condition=models.Q(email__isnull=False),
                name="run_step_one_per_email",
            ),
        ]
        indexes = [
            # Serves a run's timeline, in the order the steps were taken.
            models.Index(fields=["run", "started_at", "id"], name="run_step_timeline_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.step_key} #{self.visit} ({self.status})"


class WaitStatus(models.TextChoices):
    WAITING = "waiting"
    MATCHED = "matched"
    TIMED_OUT = "timed_out"
    CANCELED = "canceled"


class RunWait(models.Model):
    """A run parked on a step: a `wait_for_event` until its event (matched by contact and
    correlation) or its timeout, or a `wait` (no event) until `timeout_at`, when it ends
    `timed_out`, meaning the duration has passed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = ProjectForeignKey(Project, on_delete=models.CASCADE, related_name="run_waits")
    # No index of its own: `run_wait_once_per_visit` leads with it.
    run = models.ForeignKey(
        AutomationRun, on_delete=models.CASCADE, related_name="waits", db_index=False
    )
    contact = models.ForeignKey(
        Contact, on_delete=models.SET_NULL, null=True, blank=True, related_name="run_waits"
    )
    step_key = models.CharField(max_length=64)
    visit = models.PositiveIntegerField(default=1)
    event = models.CharField(max_length=200, null=True, blank=True)
    correlation_key = models.CharField(max_length=200, null=True, blank=True)
    correlation_value = models.CharField(max_length=500, null=True, blank=True)
    timeout_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=WaitStatus.choices, default=WaitStatus.WAITING)
    # The event that completed the wait, and its payload (for `steps.<key>.event.payload`,
    # which outlives the event's own retention).
    matched_event_id = models.UUIDField(null=True, blank=True)
    matched_payload = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "step_key", "visit"], name="run_wait_once_per_visit"
            ),
        ]
        indexes = [
            # Serves the due sweep: open waits by deadline.
            models.Index(
                fields=["timeout_at"],
                condition=models.Q(status=WaitStatus.WAITING),
                name="run_wait_due_idx",
            ),
            # Serves event processing: the open waits of a contact for an event name.
            models.Index(
                fields=["contact", "event"],
                condition=models.Q(status=WaitStatus.WAITING),
                name="run_wait_match_idx",
            ),
            # Serves the retention purge of resolved waits (`wait_retention_days`).
            models.Index(
                fields=["project", "resolved_at"],
                condition=~models.Q(status=WaitStatus.WAITING),
                name="run_wait_purge_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.step_key} #{self.visit} ({self.status})"

    @property
    def correlation(self) -> dict[str, str] | None:
        if self.correlation_key is None:
            return None
        return {"key": self.correlation_key, "value": self.correlation_value or ""}


class RunJob(WorkItem):
    """The work-queue row of a run (config/workqueue/): due when the engine has something to
    do for it (the run just started, its wait was matched or reached its timeout, or a
    paused automation was resumed). One row per run for the run's whole life: the engine
    re-arms it (`next_attempt_at` is the wait's deadline while the run waits) instead of
    adding rows, so one run is never advanced by two jobs, and the kit's due index is also
    the index of wait deadlines."""

    run = models.OneToOneField(
        AutomationRun, on_delete=models.CASCADE, primary_key=True, related_name="job"
    )
    created_at = models.DateTimeField(default=clock.now, editable=False)

    class Meta:
        indexes = [
            # Serve the workers' claim (runs due now, waits whose deadline passed) and the
            # takeover of jobs whose worker died.
            due_index("run_job_due_idx"),
            lease_index("run_job_lease_idx"),
            # Serves the dead-letter list of the staff console.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="dead_lettered"),
                name="run_job_dead_letter_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"job of run {self.run_id} ({self.status})"


class TriggerStamp(models.Model):
    """Which state of a project's automations event processing must match against: a new
    `stamp` is written by every change of what events start or resume (publish, pause,
    resume, archive, delete) in that change's own transaction. Event processing reads it
    once per batch and project (a key lookup) and rebuilds its in-process trigger map
    only when it differs, so an event accepted after a change committed meets the change,
    whichever process handles it. No row: the project's automations never changed."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    stamp = models.UUIDField()

    def __str__(self) -> str:
        return f"triggers of {self.project_id}: {self.stamp}"
