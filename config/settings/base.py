"""Settings shared by every environment; everything that varies is read from the environment."""

from pathlib import Path
from typing import Any

import environ

from config.runtime.secrets import key_derived_from
from config.settings import connections

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="insecure-local-development-key-change-me")
# Fernet keys that encrypt secrets at rest (config/runtime/secrets.py), comma-separated: the first
# encrypts, every one decrypts. Local and test runs derive one from SECRET_KEY; production
# requires its own.
SECRETS_ENCRYPTION_KEY = env.str("SECRETS_ENCRYPTION_KEY", default="") or key_derived_from(
    SECRET_KEY
)
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])

INSTALLED_APPS = [
    # Django's admin with the staff console as its site (config/console/site.py).
    "config.console.apps.ConsoleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "anymail",
    "tenancy",
    "tenancy.preparedactions",
    "events",
    "contacts",
    "contacts.audiences",
    "contacts.topics",
    "messaging",
    "pushproviders",
    "automations",
    "imports",
    "agent",
    "tracking",
    "webhooks",
]

MIDDLEWARE = [
    # The request id (logs, tasks, X-Request-Id) and the request metrics, around everything.
    "config.api.middleware.RequestContextMiddleware",
    # Every error answer, even one made by the middleware below, is the envelope.
    "config.api.middleware.ErrorEnvelopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Paths answer exactly as written: no redirect to a slash-terminated twin.
APPEND_SLASH = False

# The largest request body (2.5 MB, Django's default, stated here because the API
# documents it): JSON bodies over it answer 413 `request_too_large`. A view may allow more
# with `max_body_bytes` (the event batch does).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# Django's debug page and error reports mask connection URLs as well as secrets.
DEFAULT_EXCEPTION_REPORTER_FILTER = (
    "config.observability.diagnostics.ConnectionSafeExceptionReporterFilter"
)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [
            BASE_DIR / "templates",
            BASE_DIR / "config" / "console" / "templates",
            BASE_DIR / "config" / "workqueue" / "templates",
        ],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASES, CACHES and CELERY_BROKER_URL: PostgreSQL, and Redis or Valkey shared by every
# process. Each environment's settings read them (config/settings/connections.py checks
# them), with the defaults that environment has: `make run`'s servers (local), 127.0.0.1
# (test), none (production).
# What sits between the service and PostgreSQL: `none`, or `transaction` behind a pooler in
# transaction mode (PgBouncer), where no server connection keeps anything of ours from one
# transaction to the next (connections.database turns off what would rely on it).
DATABASE_POOLER = connections.pooler(env)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Seconds each server process keeps key records and projects in memory in front of the
# shared cache; changes on other processes are seen within this bound (0 turns it off).
LOCAL_CACHE_SECONDS = env.float("LOCAL_CACHE_SECONDS", default=5)
# `manage.py create_demo_admin` (run by `make run` on first start) prints a staff login's
# password; only the local settings allow it.
DEMO_ADMIN_ALLOWED = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
# The staff console shows times to the second (config/console/formats/en/formats.py).
FORMAT_MODULE_PATH = ["config.console.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenancy.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenancy.api.permissions.HasProjectAccess"],
    "DEFAULT_RENDERER_CLASSES": ["config.api.envelope.EnvelopeRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.negotiation.JsonFirstNegotiation",
    "DEFAULT_PARSER_CLASSES": [
        "config.api.parsers.JsonParser",
    ],
    "EXCEPTION_HANDLER": "config.api.exceptions.envelope_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "config.api.schema.EnvelopeAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Messaging and Automation Service API",
    "DESCRIPTION": (
        "Contacts, events, automations, templates and sends. Every response is a JSON "
        "envelope: `{status, data}` on success (lists add `metadata`), "
        "`{status, error}` on failure. Agents reach the same operations as MCP tools at "
        "`POST /mcp` (Streamable HTTP, JSON-RPC 2.0, personal keys only), which this "
        "document leaves out: its tools and their input schemas are listed by `tools/list`."
    ),
    "VERSION": "0.3.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /docs serves Swagger UI from our own static files, so it works without internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "ApiKey": {"type": "http", "scheme": "bearer", "description": "sr_… or sr_user_… key"}
        }
    },
    # Choice sets whose member names (`status`, `source`) other families also use.
    "ENUM_NAME_OVERRIDES": {
        "SubscriptionStatusEnum": "contacts.topics.models.SubscriptionStatus",
        "SubscriptionSourceEnum": "contacts.topics.models.SubscriptionSource",
        "DomainStatusEnum": "messaging.models.domains.DomainStatus",
        "SuppressionReasonEnum": "messaging.models.suppressions.SuppressionReason",
        "PushProviderStatusEnum": "pushproviders.models.ProviderStatus",
        "PushPlatformEnum": "pushproviders.models.Platform",
        "ApnsEnvironmentEnum": "pushproviders.models.ApnsEnvironment",
        "PropertyTypeEnum": "contacts.audiences.models.PropertyType",
        "AutomationStatusEnum": "automations.models.AutomationStatus",
        "AutomationVersionStateEnum": "automations.models.AutomationVersionState",
        "RunStatusEnum": "automations.models.RunStatus",
        "RunStepTypeEnum": "automations.models.StepType",
        "RunStepStatusEnum": "automations.models.StepStatus",
        "RunWaitStatusEnum": "automations.models.WaitStatus",
        "ExecutionModeEnum": "automations.models.ExecutionMode",
        "TerminalReasonEnum": "automations.models.TerminalReason",
        "ResolvedIdentityTypeEnum": "automations.models.IdentityType",
        "ImportStatusEnum": "imports.models.ImportStatus",
        "ImportSourceEnum": "imports.models.ImportSource",
        "ImportRowStatusEnum": "imports.models.RowStatus",
        "ImportRowErrorEnum": "imports.models.RowError",
    },
}

# Celery, on the Redis broker. Longer than the longest countdown any task is given, so a
# delayed task is not redelivered while it still waits.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3 * 3600}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 4
CELERY_TIMEZONE = "UTC"
# Any number of beat processes may run (one per host): one holds the lease in the broker's
# Redis and schedules, the others stand by (config/beat.py). A standby takes over within
# BEAT_LEASE_SECONDS (plus a tick, at most a third of it) of the active one's death, and at
# its next tick after a clean stop.
CELERY_BEAT_SCHEDULER = "config.beat:LeasedScheduler"
BEAT_LEASE_SECONDS = env.float("BEAT_LEASE_SECONDS", default=15.0)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers log through LOGGING below (and its database error filter), not handlers of
# Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Each Celery queue's task time limits in seconds, soft then hard (config/celery.py gives
# every task its queue's). The soft limit raises SoftTimeLimitExceeded in the task: the
# work-queue kit then hands the rows the task holds back as a failed attempt, retried by
# the queue's policy (config/workqueue). The hard limit kills the worker process; the
# rows' lease then hands them on. A draining task stops after its budget and the batch
# under way, so a soft limit leaves the queue's budget plus its longest lease: events and
# automations 20 + 60 s, email and campaign fan-out 30 + 120 and 30 + 300 s, push 30 + 120
# s, imports 60 + 300 s.
TASK_TIME_LIMITS: dict[str, tuple[float, float]] = {
    "default": (
        env.float("DEFAULT_TASK_SOFT_TIME_LIMIT_SECONDS", default=60.0),
        env.float("DEFAULT_TASK_TIME_LIMIT_SECONDS", default=90.0),
    ),
    "events": (
        env.float("EVENTS_TASK_SOFT_TIME_LIMIT_SECONDS", default=90.0),
        env.float("EVENTS_TASK_TIME_LIMIT_SECONDS", default=120.0),
    ),
    "messaging": (
        env.float("MESSAGING_TASK_SOFT_TIME_LIMIT_SECONDS", default=360.0),
        env.float("MESSAGING_TASK_TIME_LIMIT_SECONDS", default=420.0),
    ),
    "push": (
        env.float("PUSH_TASK_SOFT_TIME_LIMIT_SECONDS", default=180.0),
        env.float("PUSH_TASK_TIME_LIMIT_SECONDS", default=240.0),
    ),
    "automations": (
        env.float("AUTOMATIONS_TASK_SOFT_TIME_LIMIT_SECONDS", default=90.0),
        env.float("AUTOMATIONS_TASK_TIME_LIMIT_SECONDS", default=120.0),
    ),
    "imports": (
        env.float("IMPORTS_TASK_SOFT_TIME_LIMIT_SECONDS", default=390.0),
        env.float("IMPORTS_TASK_TIME_LIMIT_SECONDS", default=450.0),
    ),
    "webhooks": (
        env.float("WEBHOOKS_TASK_SOFT_TIME_LIMIT_SECONDS", default=180.0),
        env.float("WEBHOOKS_TASK_TIME_LIMIT_SECONDS", default=240.0),
    ),
}

# Sending domains: the SPF include every domain publishes (the SPF record of the servers
# that send the mail), and the DNS server verification asks (`host:port`; empty: the
# system's resolver) with the seconds each lookup may take.
SENDING_SPF_INCLUDE = env.str("SENDING_SPF_INCLUDE", default="spf.sendrealm.com")
DNS_RESOLVER = env.str("DNS_RESOLVER", default="")
DNS_TIMEOUT_SECONDS = env.float("DNS_TIMEOUT_SECONDS", default=3.0)

# Email transport (docs: README, configuration). `EMAIL_URL` `smtp://host:port` or
# `smtp+tls://user:password@host:port` (STARTTLS; `smtps://` for implicit TLS) sends
# through Django's SMTP backend; empty keeps every message in the local capture
# (messaging.backends.CaptureBackend, shown in the admin). An ESP through django-anymail
# sets `EMAIL_BACKEND` (e.g. `anymail.backends.postmark.EmailBackend`) and its own
# `ANYMAIL` settings instead, with `EMAIL_URL` empty.
EMAIL_URL = env.str("EMAIL_URL", default="")
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT", default=10.0)
if EMAIL_URL:
    _email = env.email_url("EMAIL_URL")
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = _email["EMAIL_HOST"]
    EMAIL_PORT = _email["EMAIL_PORT"] or 25
    EMAIL_HOST_USER = _email["EMAIL_HOST_USER"] or ""
    EMAIL_HOST_PASSWORD = _email["EMAIL_HOST_PASSWORD"] or ""
    EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS"))
    EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL"))
else:
    EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="messaging.backends.CaptureBackend")
# django-anymail: an ESP's sending credentials and the secrets of its tracking webhook at
# /webhooks/email/<esp> (docs/API.md, ESP webhooks). Every environment variable
# `ANYMAIL_<NAME>` becomes `ANYMAIL["<NAME>"]` (e.g. ANYMAIL_POSTMARK_SERVER_TOKEN,
# ANYMAIL_MAILGUN_WEBHOOK_SIGNING_KEY); empty ones are left out, since anymail would take an
# empty signing key for a real one. ANYMAIL_WEBHOOK_SECRET is the basic-auth
# `user:password` every webhook checks, comma-separated to accept an old and a new one
# while rotating.
ANYMAIL: dict[str, Any] = {
    name.removeprefix("ANYMAIL_"): env.str(name)
    for name in sorted(env.ENVIRON)
    if name.startswith("ANYMAIL_") and name != "ANYMAIL_WEBHOOK_SECRET" and env.str(name)
}
if env.list("ANYMAIL_WEBHOOK_SECRET", default=[]):
    ANYMAIL["WEBHOOK_SECRET"] = env.list("ANYMAIL_WEBHOOK_SECRET")
# Prefixes every public link in messages (unsubscribe, tracking).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
# Deliveries one worker claims and sends over one connection, and the lease on them.
EMAIL_CLAIM_BATCH_SIZE = env.int("EMAIL_CLAIM_BATCH_SIZE", default=50)
EMAIL_LEASE_SECONDS = env.float("EMAIL_LEASE_SECONDS", default=120.0)
# The production server (config/rsgi.py): threads per server process that run requests,
# and the longest a client may pause while sending a request body (before its first byte
# too) before it is answered 408 and its connection closed.
SERVER_THREADS = env.int("SERVER_THREADS", default=4)
REQUEST_BODY_TIMEOUT_SECONDS = env.float("REQUEST_BODY_TIMEOUT_SECONDS", default=10.0)

# History tables partitioned by time (config/db/partitions.py): one partition per
# interval ("month", "week" or "day"), made this many intervals ahead by the beat's
# `partitions.maintain`, and the longest the making or dropping of one waits for its lock
# before leaving it to the next run (statements on the table queue behind the wait).
PARTITION_INTERVAL = env.str("PARTITION_INTERVAL", default="month")
PARTITIONS_AHEAD = env.int("PARTITIONS_AHEAD", default=3)
PARTITION_LOCK_TIMEOUT_SECONDS = env.float("PARTITION_LOCK_TIMEOUT_SECONDS", default=1.0)

# Contact imports (docs/API.md, Imports): the largest CSV upload (a larger one is 413
# before it is read) and row count, the rows planned and committed per chunk, and how
# long a commit worker's claim on a chunk holds.
IMPORT_MAX_FILE_BYTES = env.int("IMPORT_MAX_FILE_BYTES", default=256 * 1024 * 1024)
IMPORT_MAX_ROWS = env.int("IMPORT_MAX_ROWS", default=2_000_000)
IMPORT_CHUNK_ROWS = env.int("IMPORT_CHUNK_ROWS", default=5000)
IMPORT_LEASE_SECONDS = env.float("IMPORT_LEASE_SECONDS", default=300.0)
# Push: URLs fetched on a user's behalf (subscription endpoints, a service account's
# token_uri) must be https to public addresses (config/net/netguard.py); on, this also lets
# http and loopback through, for tests against local stand-ins only.
PUSH_ALLOW_HTTP = env.bool("PUSH_ALLOW_HTTP", default=False)
# Where push goes: FCM's HTTP v1 API, and APNs (empty: by the provider's apns_environment,
# api.push.apple.com or api.sandbox.push.apple.com). Settings so tests can use loopback
# stand-ins; they pass the same URL guard as users' URLs.
PUSH_FCM_BASE_URL = env.str("PUSH_FCM_BASE_URL", default="https://fcm.googleapis.com").rstrip("/")
PUSH_APNS_BASE_URL = env.str("PUSH_APNS_BASE_URL", default="").rstrip("/")
# Seconds for each connect, read and write of a push provider request.
PUSH_HTTP_TIMEOUT = env.float("PUSH_HTTP_TIMEOUT", default=10.0)

# Push sending: deliveries one worker claims (sent over one connection per provider),
# the lease on them, and how many accepted notifications are recorded together (a worker
# killed mid-batch resends at most that many).
PUSH_CLAIM_BATCH_SIZE = env.int("PUSH_CLAIM_BATCH_SIZE", default=100)
PUSH_LEASE_SECONDS = env.float("PUSH_LEASE_SECONDS", default=120.0)
PUSH_RECORD_EVERY = env.int("PUSH_RECORD_EVERY", default=10)
# Backoff of push deliveries after a transient provider error: the first wait, its factor
# per attempt, its cap, and the attempts in all. Unset, pushproviders' own policy holds
# (10 s, x3, an hour, 8 attempts: pushproviders/conf.py).
PUSH_RETRY_BASE_SECONDS = env.float("PUSH_RETRY_BASE_SECONDS", default=None)
PUSH_RETRY_FACTOR = env.float("PUSH_RETRY_FACTOR", default=None)
PUSH_RETRY_CAP_SECONDS = env.float("PUSH_RETRY_CAP_SECONDS", default=None)
PUSH_RETRY_MAX_ATTEMPTS = env.int("PUSH_RETRY_MAX_ATTEMPTS", default=None)

# Outbound webhooks (docs/API.md, Webhooks): endpoint URLs must be https to public
# addresses (config/net/netguard.py, checked when a delivery connects); on, this also lets
# http and loopback through, for tests against local receivers only.
WEBHOOKS_ALLOW_HTTP = env.bool("WEBHOOKS_ALLOW_HTTP", default=False)
# Seconds each connect, write and read of a delivery may take; then it is a failed attempt.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# An endpoint whose every delivery failed for this many hours is disabled.
WEBHOOK_DISABLE_AFTER_HOURS = env.float("WEBHOOK_DISABLE_AFTER_HOURS", default=72.0)
# How long a worker's claim on a batch of deliveries holds (longer than a batch of timeouts),
# and the most deliveries one replay of a time range queues again.
WEBHOOK_LEASE_SECONDS = env.float("WEBHOOK_LEASE_SECONDS", default=600.0)
# Requests of a claimed batch of deliveries under way at once (threads of the worker).
WEBHOOK_SEND_CONCURRENCY = env.int("WEBHOOK_SEND_CONCURRENCY", default=10)
WEBHOOK_REPLAY_MAX_DELIVERIES = env.int("WEBHOOK_REPLAY_MAX_DELIVERIES", default=1000)
# Days the delivery log keeps delivered and failed deliveries (pending ones stay).
WEBHOOK_RETENTION_DAYS = env.float("WEBHOOK_RETENTION_DAYS", default=30.0)
# Backoff of deliveries: the first wait, its factor, its cap and the attempts in all.
# Unset, webhooks' own policy holds (1 min, x3, 6 h, 22 attempts: about three days).
WEBHOOK_RETRY_BASE_SECONDS = env.float("WEBHOOK_RETRY_BASE_SECONDS", default=None)
WEBHOOK_RETRY_FACTOR = env.float("WEBHOOK_RETRY_FACTOR", default=None)
WEBHOOK_RETRY_CAP_SECONDS = env.float("WEBHOOK_RETRY_CAP_SECONDS", default=None)
WEBHOOK_RETRY_MAX_ATTEMPTS = env.int("WEBHOOK_RETRY_MAX_ATTEMPTS", default=None)

# Event processing: how long a worker's claim on a batch of events holds before another
# worker may take it over (events/conf.py has the pipeline's other tunables).
EVENTS_LEASE_SECONDS = env.float("EVENTS_LEASE_SECONDS", default=60.0)
# Automation runs: jobs one worker claims and advances in one transaction, and the lease
# on them (automations/conf.py has the rest of the engine's tunables).
AUTOMATIONS_CLAIM_BATCH = env.int("AUTOMATIONS_CLAIM_BATCH", default=500)
AUTOMATIONS_LEASE_SECONDS = env.float("AUTOMATIONS_LEASE_SECONDS", default=60.0)
# Campaigns: recipients per fan-out batch (one job of the work queue, one transaction of
# a few hundred ms; a batch's fixed cost, about ten statements, is a few percent at this
# size), batches one worker claims at a time, and the lease on them.
CAMPAIGN_FANOUT_BATCH_SIZE = env.int("CAMPAIGN_FANOUT_BATCH_SIZE", default=2000)
CAMPAIGN_FANOUT_CLAIM_BATCH_SIZE = env.int("CAMPAIGN_FANOUT_CLAIM_BATCH_SIZE", default=1)
CAMPAIGN_FANOUT_LEASE_SECONDS = env.float("CAMPAIGN_FANOUT_LEASE_SECONDS", default=300.0)
# Requests per second each API key may make (docs/API.md, Rate limits); a team or its plan
# may set its own. 0 turns the limit off.
API_RATE_LIMIT = env.int("API_RATE_LIMIT", default=1000)
# Usage metering and plan quotas (docs/API.md, Usage); off, nothing is counted and no
# quota is checked.
USAGE_METERING = env.bool("USAGE_METERING", default=True)
# Seconds a process keeps usage counts before adding them to the shared counters.
USAGE_FLUSH_SECONDS = env.float("USAGE_FLUSH_SECONDS", default=1.0)
# Seconds a process keeps tool-call audit rows before writing them in one statement; 0
# writes each on its call's path (docs/API.md, MCP, Audit).
AGENT_AUDIT_FLUSH_SECONDS = env.float("AGENT_AUDIT_FLUSH_SECONDS", default=1.0)
# The bearer token of GET /metrics (Prometheus); empty: the endpoint answers 404.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# `json`: one JSON object per log line, with the request id; `plain`: human-readable.
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")

LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "config.observability.logs.JsonFormatter"},
    },
    # Database errors quote rows (emails, field values); logs keep only what names the
    # failure. Every handler carries the filter, and the request id's.
    "filters": {
        "redact_database": {"()": "config.observability.diagnostics.DatabaseErrorRedactor"},
        "request_id": {"()": "config.observability.logs.RequestIdFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "plain",
            "filters": ["redact_database", "request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # Named so that Django's own console handler (DEBUG only, without the filter) is
        # dropped: its records reach the root handlers instead.
        "django": {"level": "INFO"},
        "django.request": {"level": "ERROR"},
        # Which beat process schedules (config/beat.py): a line at each change, whatever
        # the root level, since it says which host sends the periodic tasks.
        "config.beat": {"level": "INFO"},
        # HTTP clients log request lines with the URL (APNs device tokens, Web Push
        # subscription endpoints) and, in frame traces, the authorization headers: only
        # their warnings are kept.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "hpack": {"level": "WARNING"},
        "h2": {"level": "WARNING"},
        # The MCP SDK logs the start and stop of the session manager that serves each
        # stateless request (agent/server.py) at INFO: two lines per tool call.
        "mcp": {"level": "WARNING"},
    },
}
