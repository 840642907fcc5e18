"""The prepared operation `imports.commit`: its preview is `POST /imports/{id}/preview`,
its execute `POST /imports/{id}/actions/commit/execute`. Registered when the API loads,
with an execute that answers what the endpoint answers (stored and replayed as given)."""

from typing import Any

from imports.api.serializers import ImportSerializer
from imports.services.commit import import_commit_start
from imports.services.preview import import_commit_effects
from tenancy.access import Access
from tenancy.models import Project, Scope
from tenancy.preparedactions.models import PreparedAction
from tenancy.preparedactions.registry import Operation, register


def _execute(
    *, project: Project, resource_id: str, access: Access, prepared: PreparedAction
) -> tuple[int, Any]:
    record = import_commit_start(
        project=project, import_id=resource_id, prepared_action_id=prepared.id
    )
    return 202, ImportSerializer(record).data


# Not a lifecycle action: the `messaging_rollout` flag does not gate it.
IMPORT_COMMIT = register(
    Operation(
        name="imports.commit",
        scope=Scope.IMPORTS_MANAGE,
        effects=import_commit_effects,
        execute=_execute,
        lifecycle=False,
    )
)
