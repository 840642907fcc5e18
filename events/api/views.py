"""`POST /events`, `POST /events/batch` and `GET /event-types`."""

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import ServiceError, ValidationFailed
from config.api.lean import LeanRequest
from config.api.pagination import paginate
from config.db.collector import collector_paused
from events.api.serializers import (
    EventAcceptedSerializer,
    EventBatchResultSerializer,
    EventBatchSerializer,
    EventSubmissionSerializer,
    EventTypeSerializer,
    event_types_data,
)
from events.conf import MAX_BATCH_ITEMS
from events.models import EventSource
from events.selectors import event_type_list
from events.services.ingest import IngestResult, event_ingest, event_ingest_batch
from events.validation import EventInput, batch_items_parse, error_object, event_input_parse
from tenancy.api.base import ProjectView
from tenancy.models import Project, Scope


class EventIngestView(ProjectView):
    """Submits one customer event: 202 when new, 200 with `duplicate: true` on a resend."""

    write_scope = Scope.EVENTS_WRITE
    lean_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="events_create",
        request=EventSubmissionSerializer,
        responses={
            202: EventAcceptedSerializer,
            200: OpenApiResponse(EventAcceptedSerializer, description="A resent key."),
            422: OpenApiResponse(description="`reserved_event_name` or `payload_too_large`."),
        },
    )
    def post(self, request: Request) -> Response:
        status, data = self.lean_post(request, self.project)
        return Response(data, status=status)

    @staticmethod
    def lean_post(request: Request | LeanRequest, project: Project) -> tuple[int, dict[str, Any]]:
        """The answer to a submission, on both paths (the lean path calls it directly)."""
        item = event_input_parse(request.data, project=project)
        result = event_ingest(project=project, item=item)
        return (200 if result.duplicate else 202), result.as_dict()


# Room for a full batch (500 events) with payloads at the default 64 KiB limit and their
# other members; every other endpoint takes Django's 2.5 MB.
BATCH_MAX_BODY_BYTES = 36 * 1024 * 1024


class EventBatchView(ProjectView):
    """Submits up to 500 events; each item is accepted, a duplicate, or rejected alone."""

    write_scope = Scope.EVENTS_WRITE
    max_body_bytes = BATCH_MAX_BODY_BYTES
    lean_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="events_batch_create",
        request=EventBatchSerializer,
        responses={202: EventBatchResultSerializer},
    )
    def post(self, request: Request) -> Response:
        status, data = self.lean_post(request, self.project)
        return Response(data, status=status)

    @staticmethod
    def lean_post(request: Request | LeanRequest, project: Project) -> tuple[int, dict[str, Any]]:
        """The answer to a batch, on both paths (the lean path calls it directly)."""
        raw_items = batch_items_parse(request.data)
        # A batch's items are thousands of small objects alive at once: the cyclic
        # collector would scan them again and again (config/db/collector.py).
        with collector_paused():
            items: list[EventInput | ServiceError] = []
            for raw, prefix in zip(raw_items, _PREFIXES, strict=False):
                try:
                    items.append(event_input_parse(raw, project=project, prefix=prefix))
                except ServiceError as error:
                    items.append(error)
            results = event_ingest_batch(project=project, items=items)
            return 202, batch_answer(results)


# Where each item of a batch is, for the paths of its issues.
_PREFIXES = tuple(f"events.{index}." for index in range(MAX_BATCH_ITEMS))


def batch_answer(results: list[IngestResult | ServiceError]) -> dict[str, Any]:
    """A batch's `data`: one result per item, in order, and the counts."""
    rows = []
    accepted = duplicates = 0
    for index, result in enumerate(results):
        if isinstance(result, IngestResult):
            if result.duplicate:
                status = "duplicate"
                duplicates += 1
            else:
                status = "accepted"
                accepted += 1
            rows.append({"index": index, "status": status, "id": str(result.id), "error": None})
        else:
            rows.append(
                {"index": index, "status": "rejected", "id": None, "error": error_object(result)}
            )
    return {
        "results": rows,
        "accepted": accepted,
        "duplicates": duplicates,
        "rejected": len(results) - accepted - duplicates,
    }


class EventTypeListView(ProjectView):
    """The event catalog: names, sources and observed field types (no example payloads)."""

    paginated = True

    @extend_schema(
        operation_id="event_types_list",
        parameters=[
            OpenApiParameter(
                "search", str, description="Substring of the event name, case-insensitive."
            ),
            OpenApiParameter("source", str, enum=list(EventSource.values)),
        ],
        responses={200: EventTypeSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        source = request.query_params.get("source")
        if source is not None and source not in EventSource.values:
            raise ValidationFailed.at(
                "source", "Must be `customer` or `system`.", code="invalid_choice"
            )
        search = request.query_params.get("search")
        if search is not None and "\x00" in search:
            # PostgreSQL text cannot hold NUL; the query would fail with a 500.
            raise ValidationFailed.at(
                "search", "Contains characters not allowed.", code="invalid_characters"
            )
        entries = event_type_list(project=self.project, search=search, source=source)
        return paginate(request, entries, event_types_data)
