"""The execute of the prepared operation `imports.commit` (registered in imports/apps.py):
its preview is `POST /imports/{id}/preview`, its execute `POST
/imports/{id}/actions/commit/execute`, which answers what this returns (stored and
replayed as given)."""

from typing import Any

from imports.api.serializers import ImportSerializer
from imports.services.commit import import_commit_start
from tenancy.access import Access
from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction
from tenancy.preparedactions.registry import Operation, operation_get


def import_commit_execute(
    *, project: Project, resource_id: str, access: Access, prepared: PreparedAction
) -> tuple[int, Any]:
    record = import_commit_start(
        project=project, import_id=resource_id, prepared_action_id=prepared.id
    )
    return 202, ImportSerializer(record).data


def import_commit_operation() -> Operation:
    """The registered `imports.commit`."""
    operation = operation_get("imports.commit")
    assert operation is not None, "imports/apps.py registers imports.commit"
    return operation
