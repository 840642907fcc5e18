"""The prepared operation `campaigns.send`, named by dotted path in `messaging/apps.py`:
prepare shows what sending would do, execute sends what was shown and answers the
campaign (202)."""

from typing import Any

from messaging.api.views.campaigns import actor_of, campaign_data
from messaging.services.campaign_sending import campaign_send, campaign_send_effects
from tenancy.access import Access
from tenancy.models import Project
from tenancy.preparedactions.models import PreparedAction


def send_effects(*, project: Project, resource_id: str, access: Access) -> dict[str, Any]:
    return campaign_send_effects(project=project, campaign_id=resource_id)


def send_execute(
    *, project: Project, resource_id: str, access: Access, prepared: PreparedAction
) -> tuple[int, Any]:
    campaign = campaign_send(
        project=project,
        campaign_id=resource_id,
        actor=actor_of(access),
        prepared=prepared.effects,
    )
    return 202, campaign_data(campaign)
