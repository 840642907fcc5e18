"""The agent interface's own tool: executing a prepared action of any family.

Every family's execute endpoint (`POST /<resource>/{id}/actions/<action>/execute`) takes the
same body, so one tool fronts them all: it finds the preparation's operation and resource,
then calls that operation's endpoint (named in its family's `EXECUTE_PATHS`)."""

from typing import Any

from config.registries.agenttools import AgentTool
from tenancy.access import Access
from tenancy.errors import PreparedActionInvalid
from tenancy.models import Project
from tenancy.preparedactions.api.serializers import ExecuteInputSerializer
from tenancy.preparedactions.selectors import prepared_action_get

TOOLS = [
    AgentTool(
        name="prepared_action_execute",
        description=(
            "Execute a prepared action (from `automation_action_prepare` or another prepare "
            "tool) once, before its `expires_at`. Choose a fresh `idempotency_key` per "
            "action: the same key again returns the first result, so a retry after a "
            "timeout is safe; a preparation already executed under another key is a "
            "conflict."
        ),
        method="POST",
        # Every execute operation takes this body; this one shows it.
        path="/automations/{automation_id}/actions/{action}/execute",
        route="agent.tools.prepared_action_route",
    ),
]


def prepared_action_route(
    *, project: Project, access: Access, arguments: dict[str, Any]
) -> tuple[str, str]:
    """The operation and resource a preparation of the project names. The body is checked
    with the execute endpoints' own serializer first, as those endpoints check it."""
    body = ExecuteInputSerializer(data=arguments)
    body.is_valid(raise_exception=True)
    prepared = prepared_action_get(
        project=project, prepared_action_id=body.validated_data["prepared_action_id"]
    )
    if prepared is None:
        raise PreparedActionInvalid()
    return prepared.operation, prepared.resource_id
