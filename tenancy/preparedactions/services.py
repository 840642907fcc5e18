"""Prepare and execute: expiring preparations, idempotent executions."""

import datetime as dt
import json
from typing import Any

from django.db import transaction
from rest_framework.utils.encoders import JSONEncoder

from config.api.errors import Conflict
from config.runtime import clock
from tenancy.access import Access
from tenancy.errors import PreparedActionExpired, PreparedActionInvalid
from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction, PreparedActionStatus
from tenancy.preparedactions.registry import Operation

EXPIRE_BATCH = 1000


def _as_json(value: Any) -> Any:
    """`value` as the API renders it (ids and times as strings), ready to store and replay."""
    return json.loads(json.dumps(value, cls=JSONEncoder))


def prepared_action_prepare(
    *,
    project: Project,
    access: Access,
    operation: Operation,
    resource_id: str,
    effects: dict[str, Any] | None = None,
) -> PreparedAction:
    """Records what executing `operation` on the resource would do, valid for the project's TTL."""
    if effects is None:
        effects = operation.describe(project=project, resource_id=resource_id, access=access)
    return PreparedAction.objects.create(
        project=project,
        operation=operation.name,
        resource_id=resource_id,
        api_key_id=access.key.id,
        user_id=access.key.user_id,
        effects=_as_json(effects),
        expires_at=clock.now() + dt.timedelta(seconds=project.prepared_action_ttl_seconds),
    )


def _belongs_to_caller(prepared: PreparedAction, access: Access) -> bool:
    if access.key.is_personal:
        return prepared.user_id == access.key.user_id
    return str(prepared.api_key_id) == access.key.id


@transaction.atomic
def prepared_action_execute(
    *,
    project: Project,
    access: Access,
    operation: Operation,
    resource_id: str,
    prepared_action_id: str,
    idempotency_key: str,
) -> PreparedAction:
    """Runs a prepared action once. The row lock makes concurrent executes take turns: the
    first runs the operation, the rest see it executed and replay or conflict."""
    prepared = PreparedAction.objects.select_for_update().filter(id=prepared_action_id).first()
    if (
        prepared is None
        or prepared.project_id != project.id
        or prepared.operation != operation.name
        or prepared.resource_id != resource_id
        or not _belongs_to_caller(prepared, access)
    ):
        raise PreparedActionInvalid()
    if prepared.status == PreparedActionStatus.EXECUTED:
        if prepared.idempotency_key == idempotency_key:
            return prepared
        raise Conflict("This prepared action was already executed with another idempotency key.")
    if prepared.status == PreparedActionStatus.EXPIRED or clock.now() >= prepared.expires_at:
        raise PreparedActionExpired()
    status, data = operation.perform(
        project=project, resource_id=resource_id, access=access, prepared=prepared
    )
    prepared.status = PreparedActionStatus.EXECUTED
    prepared.idempotency_key = idempotency_key
    prepared.result_status = status
    # Stored as the client saw it (ids and times as strings), so a replay answers the same.
    prepared.result = _as_json(data)
    prepared.executed_at = clock.now()
    prepared.save(
        update_fields=["status", "idempotency_key", "result_status", "result", "executed_at"]
    )
    return prepared


def prepared_actions_expire(*, limit: int = EXPIRE_BATCH) -> int:
    """Marks pending actions past their deadline as expired; one bounded batch."""
    due = list(
        PreparedAction.objects.filter(
            status=PreparedActionStatus.PENDING, expires_at__lte=clock.now()
        ).values_list("id", flat=True)[:limit]
    )
    return PreparedAction.objects.filter(id__in=due, status=PreparedActionStatus.PENDING).update(
        status=PreparedActionStatus.EXPIRED
    )
