"""The bulk writer of emails: many `Email` rows and the delivery jobs of the queued ones,
in the caller's transaction, in two statements whatever their number. Every sender that
makes emails in bulk stores them here (a campaign's fan-out, `EmailBatch` for the
automations engine and `email_send_many`), so the rows they write are the same rows.

Emails travel as columns: those that differ per email (`columns`, one tuple per email)
and those every email of the write shares (`constants`, formatted once). Both inserts are
a COPY (config/db/copy.py).
"""

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection, transaction

from config.db.copy import copy_insert
from config.workqueue.models import WorkStatus
from messaging.models import Email, EmailDelivery
from messaging.queue import EMAIL_QUEUE


def _delivery_constants(now: dt.datetime) -> dict[str, Any]:
    """A new delivery job: due now, no attempt yet."""
    return {
        "status": WorkStatus.ACCEPTED,
        "attempts": 0,
        "next_attempt_at": now,
        "last_error": "",
        "error_code": "",
        "created_at": now,
    }


def emails_insert(
    *,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    constants: Mapping[str, Any],
    queued: Iterable[Any],
    now: dt.datetime,
    due: Mapping[Any, dt.datetime] | None = None,
) -> None:
    """Inserts one email per row (values in the order of `columns`, `Email` field names
    or attnames, the first of them `id`; `constants` for the rest) and a delivery job due
    `now` for each email id of `queued` (or at `due[id]`, a not-before time the queue's
    claim respects: a message deferred by quiet hours); wakes delivery after commit when
    there is one.
    Name every column without a database default. A row that breaks a key raises
    `IntegrityError` and nothing is written."""
    if not rows:
        return
    copy_insert(Email, columns, rows, constants=constants)
    if due:
        jobs: list[tuple[Any, ...]] = [(email_id, due.get(email_id, now)) for email_id in queued]
        job_constants = _delivery_constants(now)
        del job_constants["next_attempt_at"]
        copy_insert(EmailDelivery, ("email", "next_attempt_at"), jobs, constants=job_constants)
    else:
        jobs = [(email_id,) for email_id in queued]
        copy_insert(EmailDelivery, ("email",), jobs, constants=_delivery_constants(now))
    if jobs:
        transaction.on_commit(EMAIL_QUEUE.wake)


def emails_insert_instances(
    emails: Sequence[Email], *, queued: Iterable[Email], now: dt.datetime
) -> None:
    """`emails_insert` for emails built as model instances, stored as they are (each
    column read off the instance); marks them stored."""
    if not emails:
        return
    fields = [field.attname for field in Email._meta.concrete_fields]
    emails_insert(
        columns=fields,
        rows=[tuple(getattr(email, name) for name in fields) for email in emails],
        constants={},
        queued=[email.pk for email in queued],
        now=now,
    )
    for email in emails:
        email._state.adding = False
        email._state.db = connection.alias
