"""Campaigns (`/campaigns`) and push campaigns (`/push-campaigns`): one model, one set of
views, each path serving only its channel (a campaign of the other channel is 404)."""

import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from django.db.models import Model
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from config.api.errors import Forbidden, ValidationFailed, or_404
from config.api.pagination import paginate
from messaging.api.serializers.campaigns import (
    CampaignSerializer,
    EmailCampaignCreateSerializer,
    EmailCampaignUpdateSerializer,
    PushCampaignCreateSerializer,
    PushCampaignUpdateSerializer,
)
from messaging.models import Campaign, CampaignStatus, Channel
from messaging.selectors.campaigns import campaign_get, campaign_list, with_stats
from messaging.services.campaign_sending import campaign_send
from messaging.services.campaigns import (
    Actor,
    campaign_cancel,
    campaign_create,
    campaign_delete,
    campaign_submit,
    campaign_update,
    campaign_withdraw,
)
from tenancy.access import Access
from tenancy.api.base import ProjectView
from tenancy.models import Scope
from tenancy.preparedactions.api.serializers import (
    EmptyBodySerializer,
    ExecuteInputSerializer,
    PreparedActionOutputSerializer,
)
from tenancy.preparedactions.api.views import ActionView
from tenancy.preparedactions.services import prepared_action_execute, prepared_action_prepare

STATUS_PARAMETER = OpenApiParameter(
    "status", str, enum=list(CampaignStatus.values), description="Only campaigns in this status."
)


def actor_of(access: Access) -> Actor:
    """Who acts, for the console's history: the key, and its user for a personal key."""
    return Actor(user_id=access.key.user_id, key_id=access.key.id)


def campaign_data(campaign: Campaign) -> Any:
    return CampaignSerializer(with_stats([campaign])[0]).data


def _page(rows: Sequence[Model]) -> Any:
    campaigns = [row for row in rows if isinstance(row, Campaign)]
    return CampaignSerializer(with_stats(campaigns), many=True).data


class CampaignView(ProjectView):
    """A view of one channel's campaigns; its errors name the campaign by `noun`."""

    channel: ClassVar[str] = Channel.EMAIL
    noun: ClassVar[str] = "campaign"

    def campaign(self, campaign_id: uuid.UUID) -> Campaign:
        return or_404(
            campaign_get(project=self.project, channel=self.channel, campaign_id=campaign_id),
            f"No such {self.noun}.",
        )


class CampaignListView(CampaignView):
    """The project's campaigns of this channel, oldest first; creating a draft."""

    paginated = True
    create_serializer: ClassVar[type[BaseSerializer[Any]]] = EmailCampaignCreateSerializer

    @extend_schema(
        parameters=[STATUS_PARAMETER],
        responses={200: CampaignSerializer(many=True)},
        operation_id="campaigns_list",
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status")
        if status is not None and status not in CampaignStatus.values:
            raise ValidationFailed.at(
                "status",
                f"Must be one of {', '.join(f'`{s}`' for s in CampaignStatus.values)}.",
                code="invalid_choice",
            )
        campaigns = campaign_list(project=self.project, channel=self.channel, status=status)
        return paginate(request, campaigns, _page)

    @extend_schema(
        request=EmailCampaignCreateSerializer,
        responses={201: CampaignSerializer},
        operation_id="campaigns_create",
    )
    def post(self, request: Request) -> Response:
        """Creates a draft: a template of this channel and an audience or a topic of the
        project (another project's is 400 `not_found` at its path)."""
        body = self.validated(self.create_serializer)
        campaign = campaign_create(
            project=self.project,
            channel=self.channel,
            name=body["name"],
            template_id=body["template_id"],
            audience_id=body.get("audience_id"),
            topic_id=body.get("topic_id"),
            app_ref=body.get("app_id"),
            from_email=body.get("from"),
            scheduled_at=body.get("scheduled_at"),
            transactional=body.get("transactional", False),
        )
        return Response(campaign_data(campaign), status=201)


class CampaignDetailView(CampaignView):
    """One campaign: read it, edit it while it is a draft, soft-delete it."""

    update_serializer: ClassVar[type[BaseSerializer[Any]]] = EmailCampaignUpdateSerializer

    @extend_schema(responses={200: CampaignSerializer}, operation_id="campaigns_retrieve")
    def get(self, request: Request, campaign_id: uuid.UUID) -> Response:
        return Response(campaign_data(self.campaign(campaign_id)))

    @extend_schema(
        request=EmailCampaignUpdateSerializer,
        responses={200: CampaignSerializer},
        operation_id="campaigns_update",
    )
    def patch(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Edits a draft; any other status is 409 (withdraw one under review first)."""
        body = self.validated(self.update_serializer)
        renamed = {"from": "from_email", "app_id": "app_ref"}
        changes = {renamed.get(name, name): value for name, value in body.items()}
        campaign = campaign_update(
            project=self.project, channel=self.channel, campaign_id=campaign_id, changes=changes
        )
        return Response(campaign_data(campaign))

    @extend_schema(responses={200: CampaignSerializer}, operation_id="campaigns_destroy")
    def delete(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Soft-deletes the campaign (answered with `deleted_at` set); a scheduled or
        sending one is 409: cancel it first."""
        campaign = campaign_delete(
            project=self.project, channel=self.channel, campaign_id=campaign_id
        )
        return Response(campaign_data(campaign))


class CampaignSubmitView(CampaignView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: CampaignSerializer},
        operation_id="campaigns_submit",
    )
    def post(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Submits a draft for review by staff (`in_review`). Its template must be
        published (and an email campaign have a sender), else 409 with the issues."""
        self.validated(EmptyBodySerializer)
        campaign = campaign_submit(
            project=self.project, channel=self.channel, campaign_id=campaign_id
        )
        return Response(campaign_data(campaign))


class CampaignWithdrawView(CampaignView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: CampaignSerializer},
        operation_id="campaigns_withdraw",
    )
    def post(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Takes a campaign under review back to draft."""
        self.validated(EmptyBodySerializer)
        campaign = campaign_withdraw(
            project=self.project, channel=self.channel, campaign_id=campaign_id
        )
        return Response(campaign_data(campaign))


class CampaignCancelView(CampaignView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses={202: CampaignSerializer},
        operation_id="campaigns_cancel",
    )
    def post(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Cancels the campaign in any state before `sent`; a sending one makes no new
        messages and its queued ones are not sent."""
        self.validated(EmptyBodySerializer)
        campaign = campaign_cancel(
            project=self.project,
            channel=self.channel,
            campaign_id=campaign_id,
            actor=actor_of(self.access),
        )
        return Response(campaign_data(campaign), status=202)


class CampaignSendView(CampaignView):
    write_scope = Scope.MESSAGES_SEND

    @extend_schema(
        request=EmptyBodySerializer,
        responses={202: CampaignSerializer},
        operation_id="campaigns_send",
    )
    def post(self, request: Request, campaign_id: uuid.UUID) -> Response:
        """Sends an approved campaign: at once (`sending`) or at its `scheduled_at`
        (`scheduled`). Not approved: 409. Integration keys only: personal keys prepare
        and execute the send."""
        if self.access.key.is_personal:
            raise Forbidden(
                "Personal keys send a campaign in two steps: POST "
                f".../{campaign_id}/actions/send/prepare, then .../send/execute with the "
                "prepared_action_id."
            )
        self.validated(EmptyBodySerializer)
        campaign = campaign_send(
            project=self.project,
            channel=self.channel,
            campaign_id=campaign_id,
            actor=actor_of(self.access),
        )
        return Response(campaign_data(campaign), status=202)


class CampaignSendPrepareView(CampaignView, ActionView):
    family = "campaigns"

    @extend_schema(
        request=EmptyBodySerializer,
        responses={200: PreparedActionOutputSerializer},
        operation_id="campaigns_send_prepare",
    )
    def post(self, request: Request, campaign_id: uuid.UUID, action: str) -> Response:
        """Prepares the send: `effects` holds `recipients` and `suppressed` (as a send now
        would find them), the `channel`, the frozen `template_version_id` and
        `scheduled_at` (null: at once). Not approved: 409 already here."""
        operation = self.operation()
        self.validated(EmptyBodySerializer)
        self.campaign(campaign_id)
        prepared = prepared_action_prepare(
            project=self.project,
            access=self.access,
            operation=operation,
            resource_id=str(campaign_id),
        )
        return Response(PreparedActionOutputSerializer(prepared).data)


class CampaignSendExecuteView(CampaignView, ActionView):
    family = "campaigns"

    @extend_schema(
        request=ExecuteInputSerializer,
        responses={202: CampaignSerializer},
        operation_id="campaigns_send_execute",
    )
    def post(self, request: Request, campaign_id: uuid.UUID, action: str) -> Response:
        """Executes a prepared send once (202 with the campaign); the same
        `idempotency_key` again answers the first result."""
        operation = self.operation()
        body = self.validated(ExecuteInputSerializer)
        self.campaign(campaign_id)
        prepared = prepared_action_execute(
            project=self.project,
            access=self.access,
            operation=operation,
            resource_id=str(campaign_id),
            prepared_action_id=str(body["prepared_action_id"]),
            idempotency_key=body["idempotency_key"],
        )
        return Response(prepared.result, status=prepared.result_status or 202)


# --- the same for push campaigns ---------------------------------------------------------------


@extend_schema_view(
    get=extend_schema(operation_id="push_campaigns_list"),
    post=extend_schema(operation_id="push_campaigns_create", request=PushCampaignCreateSerializer),
)
class PushCampaignListView(CampaignListView):
    """The project's push campaigns, oldest first; creating a draft (`app_id` required)."""

    channel = Channel.PUSH
    noun = "push campaign"
    create_serializer = PushCampaignCreateSerializer


@extend_schema_view(
    get=extend_schema(operation_id="push_campaigns_retrieve"),
    patch=extend_schema(operation_id="push_campaigns_update", request=PushCampaignUpdateSerializer),
    delete=extend_schema(operation_id="push_campaigns_destroy"),
)
class PushCampaignDetailView(CampaignDetailView):
    channel = Channel.PUSH
    noun = "push campaign"
    update_serializer = PushCampaignUpdateSerializer


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_submit"))
class PushCampaignSubmitView(CampaignSubmitView):
    channel = Channel.PUSH
    noun = "push campaign"


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_withdraw"))
class PushCampaignWithdrawView(CampaignWithdrawView):
    channel = Channel.PUSH
    noun = "push campaign"


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_cancel"))
class PushCampaignCancelView(CampaignCancelView):
    channel = Channel.PUSH
    noun = "push campaign"


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_send"))
class PushCampaignSendView(CampaignSendView):
    channel = Channel.PUSH
    noun = "push campaign"


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_send_prepare"))
class PushCampaignSendPrepareView(CampaignSendPrepareView):
    channel = Channel.PUSH
    noun = "push campaign"


@extend_schema_view(post=extend_schema(operation_id="push_campaigns_send_execute"))
class PushCampaignSendExecuteView(CampaignSendExecuteView):
    channel = Channel.PUSH
    noun = "push campaign"
