"""Teams, their projects and members, and the API keys that act on them."""

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


class Permission(models.TextChoices):
    FULL_ACCESS = "full_access"
    SENDING_ACCESS = "sending_access"
    READ_ONLY = "read_only"


class Scope(models.TextChoices):
    RESOURCES_READ = "resources.read"
    RESOURCES_WRITE = "resources.write"
    EVENTS_WRITE = "events.write"
    MESSAGES_SEND = "messages.send"
    AUTOMATIONS_MANAGE = "automations.manage"
    IMPORTS_MANAGE = "imports.manage"


class KeyKind(models.TextChoices):
    PROJECT = "project"
    TEAM = "team"
    PERSONAL = "personal"


class EmailNormalization(models.TextChoices):
    PLAIN = "plain"
    GMAIL = "gmail"


class Meter(models.TextChoices):
    """What usage metering counts, per project and day (docs/API.md, Usage)."""

    EVENTS_INGESTED = "events_ingested"
    RUNS_STARTED = "runs_started"
    WAITS_CREATED = "waits_created"
    TEMPLATE_TESTS = "template_tests"
    EMAILS_SENT = "emails_sent"
    PUSH_SENT = "push_sent"


QUOTA_HELP = "Per calendar month (UTC); empty means no limit."
RATE_LIMIT_HELP = (
    "Requests per second per API key; empty: the next level decides (team, plan, then the "
    "API_RATE_LIMIT setting); 0: no limit."
)


class Plan(models.Model):
    """A commercial plan: monthly quotas per meter (null: unlimited) and a rate limit."""

    name = models.CharField(max_length=100, unique=True)
    events_ingested_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    runs_started_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    waits_created_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    template_tests_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    emails_sent_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    push_sent_per_month = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=QUOTA_HELP
    )
    api_rate_limit = models.PositiveIntegerField(null=True, blank=True, help_text=RATE_LIMIT_HELP)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name

    def quota(self, meter: str) -> int | None:
        value: int | None = getattr(self, f"{meter}_per_month")
        return value


class Team(models.Model):
    """A customer account: it owns projects and has members."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    messaging_rollout = models.BooleanField(
        default=False, help_text="Lets personal keys run lifecycle actions (prepare/execute)."
    )
    # No plan: no quotas, and the rate limit of the API_RATE_LIMIT setting.
    plan = models.ForeignKey(
        Plan, on_delete=models.PROTECT, null=True, blank=True, related_name="teams"
    )
    api_rate_limit = models.PositiveIntegerField(null=True, blank=True, help_text=RATE_LIMIT_HELP)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    """An isolated workspace of a team; every resource belongs to exactly one project."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)

    # Policies (docs/API.md, Foundation: project settings); `PATCH /project` changes them.
    event_payload_limit_bytes = models.PositiveIntegerField(default=65536)
    # A contact's `fields` and an audience member's `properties`, serialised after a merge.
    contact_fields_limit_bytes = models.PositiveIntegerField(default=65536)
    event_retention_days = models.PositiveIntegerField(default=90)
    run_retention_days = models.PositiveIntegerField(default=90)
    wait_retention_days = models.PositiveIntegerField(default=90)
    prepared_action_ttl_seconds = models.PositiveIntegerField(default=900)
    email_normalization = models.CharField(
        max_length=16, choices=EmailNormalization.choices, default=EmailNormalization.PLAIN
    )
    default_from = models.CharField(max_length=320, blank=True, default="")
    # Whether sent HTML gets an open pixel and tracked (redirected) links.
    track_opens = models.BooleanField(default=True)
    track_clicks = models.BooleanField(default=True)
    # Event processing retries; null keeps the service default (docs/API.md, Events:
    # retries: 2 s base, factor 2, 600 s cap, 8 attempts).
    event_retry_base_seconds = models.FloatField(null=True, blank=True)
    event_retry_factor = models.FloatField(null=True, blank=True)
    event_retry_cap_seconds = models.FloatField(null=True, blank=True)
    event_retry_max_attempts = models.PositiveSmallIntegerField(null=True, blank=True)
    # Delivery policy (docs/API.md, Delivery policy): `[{"channel", "max", "per"}]`,
    # `{"start", "end"}` or null, and the IANA zone of contacts without a `timezone` field.
    frequency_caps = models.JSONField(default=list, blank=True)
    quiet_hours = models.JSONField(null=True, blank=True)
    default_timezone = models.CharField(max_length=64, default="UTC")

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class ProjectForeignKey(models.ForeignKey[Project, Project]):
    """A resource's link to its project; `ProjectScopedModel` names the reverse accessor
    after the model (`project.contacts`, `project.audiences`).

    Django writes a `related_name` into migrations as declared, placeholder included; this
    field writes the name it resolved to instead, as a plain ForeignKey, so the models that
    moved onto the base kept their migrations unchanged."""

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, _, args, kwargs = super().deconstruct()
        kwargs["related_name"] = self.remote_field.related_name
        return name, "django.db.models.ForeignKey", args, kwargs


class ProjectScopedModel(models.Model):
    """Base of a resource that belongs to one project: a UUID id, the project (its rows
    go with it), and when it was created and last changed.

    The reverse accessor is the lower-cased class name plus "s"; a model for which that
    reads wrong declares `project = ProjectForeignKey(..., related_name="...")` itself, and
    so does one whose own index leads with the project (`db_index=False`: the key's own
    index would only cost every insert)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = ProjectForeignKey(Project, on_delete=models.CASCADE, related_name="%(class)ss")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Membership(models.Model):
    """A user's role in a team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_one_per_team_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class ApiKey(models.Model):
    """A bearer key. Only a hash of the secret is kept; `prefix` is shown to recognise it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=KeyKind.choices)
    prefix = models.CharField(max_length=24)
    secret_hash = models.CharField(max_length=64, unique=True)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    # Project key: its one project. Team key: its default project.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys"
    )
    # Team key: every project of the team, or only `projects`.
    all_projects = models.BooleanField(default=False)
    projects = models.ManyToManyField(Project, blank=True, related_name="team_keys")
    # Personal key: the user it acts for, and its scopes.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_keys",
    )
    scopes = models.JSONField(default=list, blank=True)
    permission = models.CharField(
        max_length=16, choices=Permission.choices, default=Permission.FULL_ACCESS
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(kind="project") | models.Q(project__isnull=False),
                name="api_key_project_key_has_project",
            ),
            models.CheckConstraint(
                condition=~models.Q(kind="personal") | models.Q(user__isnull=False),
                name="api_key_personal_key_has_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_personal(self) -> bool:
        return self.kind == KeyKind.PERSONAL


class ProjectGrant(models.Model):
    """A personal key's saved grant on one project: the scopes it may use there."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="grants")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="grants")
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "project"], name="grant_one_per_key_project")
        ]

    def __str__(self) -> str:
        return f"{self.api_key} on {self.project}"


class UsageDay(models.Model):
    """Metered usage of one project on one day (UTC), as folded from the live counters."""

    # No index of its own: the unique usage_day_one_per_date leads with it.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="usage_days"
    )
    date = models.DateField()
    events_ingested = models.BigIntegerField(default=0)
    runs_started = models.BigIntegerField(default=0)
    waits_created = models.BigIntegerField(default=0)
    template_tests = models.BigIntegerField(default=0)
    emails_sent = models.BigIntegerField(default=0)
    push_sent = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # Also serves GET /project/usage: a project's days in a range.
            models.UniqueConstraint(fields=["project", "date"], name="usage_day_one_per_date")
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.date}"


class UsageFold(models.Model):
    """One batch of live counters folded into UsageDay: its token makes a fold that is
    retried after a crash a no-op, so counts are never added twice."""

    token = models.CharField(max_length=64, unique=True)
    folded_at = models.DateTimeField()

    class Meta:
        indexes = [
            # Serves the purge of old tokens.
            models.Index(fields=["folded_at"], name="usage_fold_folded_at_idx")
        ]

    def __str__(self) -> str:
        return self.token
