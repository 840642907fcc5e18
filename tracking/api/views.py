"""The Segment HTTP Tracking API: `/v1/track`, `/v1/identify`, `/v1/page`, `/v1/screen`,
`/v1/group`, `/v1/alias` and `/v1/batch` (CONTRACT section 18, docs/API.md)."""

import datetime as dt
from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.envelope import enveloped
from config.api.errors import Issue, ValidationFailed
from config.api.parsers import GzipJsonParser
from config.db.collector import collector_paused
from config.runtime import clock
from tenancy.api.authentication import WriteKeyAuthentication
from tenancy.api.base import ProjectView
from tenancy.models import Scope
from tracking.api.serializers import (
    SegmentBatchSerializer,
    SegmentMessageSerializer,
    SegmentSuccessSerializer,
)
from tracking.messages import (
    BATCH_MAX_BYTES,
    MESSAGE_MAX_BYTES,
    Message,
    batch_parse,
    batch_sent_at,
    message_parse,
)
from tracking.services import tracking_ingest


def _success() -> Response:
    # Segment's answer, as its clients expect it: not the API's envelope (errors are).
    return enveloped({"success": True}, 200)


class SegmentView(ProjectView):
    """A Segment endpoint: a write key (HTTP Basic) or a Bearer key with `events.write`."""

    authentication_classes = [WriteKeyAuthentication]
    # Segment's clients may gzip their bodies.
    parser_classes = [GzipJsonParser]
    write_scope = Scope.EVENTS_WRITE
    lean_methods = frozenset({"POST"})
    # The OpenAPI document shows the success body as it is, without the envelope.
    success_enveloped = False


class SegmentCallView(SegmentView):
    """One message of the view's call."""

    max_body_bytes = MESSAGE_MAX_BYTES
    call: ClassVar[str]

    @extend_schema(
        tags=["tracking"],
        request=SegmentMessageSerializer,
        responses={200: SegmentSuccessSerializer},
    )
    def post(self, request: Request) -> Response:
        message = message_parse(
            request.data, project=self.project, call=self.call, received_at=clock.now()
        )
        tracking_ingest(project=self.project, messages=[message], prefixes=[""])
        return _success()


class SegmentTrackView(SegmentCallView):
    """An event: `event` its name (mapped onto the name rule), `properties` its payload."""

    call = "track"


class SegmentIdentifyView(SegmentCallView):
    """Upserts the contact (`userId`, `traits.email`, other traits as fields)."""

    call = "identify"


class SegmentPageView(SegmentCallView):
    """An event named `page` with `name` and `properties` in its payload."""

    call = "page"


class SegmentScreenView(SegmentCallView):
    """An event named `screen` with `name` and `properties` in its payload."""

    call = "screen"


class SegmentGroupView(SegmentCallView):
    """Adds the contact to the audience named `groupId`, traits as membership properties."""

    call = "group"


class SegmentAliasView(SegmentCallView):
    """Gives the contact known as `previousId` the external id `userId`, if it is free."""

    call = "alias"


class SegmentBatchView(SegmentView):
    """Messages of every call, accepted whole or not at all."""

    max_body_bytes = BATCH_MAX_BYTES

    @extend_schema(
        tags=["tracking"],
        request=SegmentBatchSerializer,
        responses={200: SegmentSuccessSerializer},
    )
    def post(self, request: Request) -> Response:
        raws, context, sent_at = batch_parse(request.data)
        received_at = clock.now()
        shared_sent_at = batch_sent_at(sent_at)
        # A batch's messages are thousands of small objects alive at once: the cyclic
        # collector would scan them again and again (config/db/collector.py).
        with collector_paused():
            messages, prefixes = self._parsed(raws, context, shared_sent_at, received_at)
            tracking_ingest(project=self.project, messages=messages, prefixes=prefixes)
        return _success()

    def _parsed(
        self,
        raws: list[Any],
        context: dict[str, Any],
        shared_sent_at: dt.datetime | None,
        received_at: dt.datetime,
    ) -> tuple[list[Message], list[str]]:
        """The batch's messages, each checked; every bad one named in one 400."""
        messages: list[Message] = []
        prefixes = [f"batch.{index}." for index in range(len(raws))]
        issues: list[Issue] = []
        for raw, prefix in zip(raws, prefixes, strict=True):
            try:
                messages.append(
                    message_parse(
                        raw,
                        project=self.project,
                        call=None,
                        received_at=received_at,
                        prefix=prefix,
                        batch_context=context,
                        batch_sent_at=shared_sent_at,
                    )
                )
            except ValidationFailed as error:
                # Every bad message is named in one 400; the batch is refused whole.
                issues.extend(error.issues)
        if issues:
            raise ValidationFailed(
                "The batch is refused whole: some messages are not valid.", issues=issues
            )
        return messages, prefixes
