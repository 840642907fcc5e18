"""Reads of prepared actions."""

import uuid

from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction


def prepared_action_get(
    *, project: Project, prepared_action_id: uuid.UUID | str
) -> PreparedAction | None:
    """A preparation of `project` by id, whatever its state; None when there is none."""
    return PreparedAction.objects.filter(project=project, id=prepared_action_id).first()
