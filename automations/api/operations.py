"""The prepared operations `automations.publish|pause|resume|archive`, named by dotted
path in `automations/apps.py`: prepare shows what the action would change, execute runs
it against what was shown and answers the automation."""

import functools
from typing import Any

from automations.api.serializers import AutomationSerializer
from automations.services.lifecycle import AUTOMATION_ACTIONS, automation_action_effects
from tenancy.access import Access
from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction


def _effects(action: str, *, project: Project, resource_id: str, access: Access) -> dict[str, Any]:
    return automation_action_effects(project=project, automation_id=resource_id, action=action)


def _execute(
    action: str, *, project: Project, resource_id: str, access: Access, prepared: PreparedAction
) -> tuple[int, Any]:
    automation = AUTOMATION_ACTIONS[action](
        project=project, automation_id=resource_id, prepared=prepared.effects
    )
    return 200, AutomationSerializer(automation).data


publish_effects = functools.partial(_effects, "publish")
publish_execute = functools.partial(_execute, "publish")
pause_effects = functools.partial(_effects, "pause")
pause_execute = functools.partial(_execute, "pause")
resume_effects = functools.partial(_effects, "resume")
resume_execute = functools.partial(_execute, "resume")
archive_effects = functools.partial(_effects, "archive")
archive_execute = functools.partial(_execute, "archive")
