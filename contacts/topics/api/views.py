import uuid

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import or_404
from config.api.pagination import paginate
from contacts.selectors import contact_get
from contacts.topics.api.serializers import (
    SubscriptionsSetSerializer,
    TopicCreateSerializer,
    TopicSerializer,
    TopicStatusSerializer,
    TopicUpdateSerializer,
)
from contacts.topics.models import SubscriptionSource, Topic
from contacts.topics.selectors import (
    topic_get,
    topic_list,
    topic_statuses,
    topics_with_subscription_of,
)
from contacts.topics.services import subscriptions_set, topic_create, topic_delete, topic_update
from tenancy.api.base import ProjectView


class TopicListView(ProjectView):
    paginated = True

    @extend_schema(responses={200: TopicSerializer(many=True)}, operation_id="topics_list")
    def get(self, request: Request) -> Response:
        return paginate(request, topic_list(project=self.project), TopicSerializer)

    @extend_schema(
        request=TopicCreateSerializer,
        responses={201: TopicSerializer},
        operation_id="topics_create",
    )
    def post(self, request: Request) -> Response:
        body = self.validated(TopicCreateSerializer)
        topic = topic_create(project=self.project, **body)
        return Response(TopicSerializer(topic).data, status=201)


class TopicDetailView(ProjectView):
    @extend_schema(responses={200: TopicSerializer}, operation_id="topics_retrieve")
    def get(self, request: Request, topic_id: uuid.UUID) -> Response:
        topic = or_404(topic_get(project=self.project, topic_id=topic_id), "No such topic.")
        return Response(TopicSerializer(topic).data)

    @extend_schema(
        request=TopicUpdateSerializer,
        responses={200: TopicSerializer},
        operation_id="topics_update",
    )
    def patch(self, request: Request, topic_id: uuid.UUID) -> Response:
        body = self.validated(TopicUpdateSerializer)
        topic = topic_update(project=self.project, topic_id=topic_id, changes=body)
        return Response(TopicSerializer(topic).data)

    @extend_schema(responses={200: TopicSerializer}, operation_id="topics_destroy")
    def delete(self, request: Request, topic_id: uuid.UUID) -> Response:
        topic = topic_delete(project=self.project, topic_id=topic_id)
        return Response(TopicSerializer(topic).data)


class ContactSubscriptionsView(ProjectView):
    """A contact's status for every topic of the project, and changes to it."""

    paginated = True

    @extend_schema(
        responses={200: TopicStatusSerializer(many=True)},
        operation_id="contact_subscriptions_list",
    )
    def get(self, request: Request, contact_id: uuid.UUID) -> Response:
        contact = or_404(
            contact_get(project=self.project, contact_id=contact_id), "No such contact."
        )
        return paginate(
            request,
            topics_with_subscription_of(contact=contact),
            lambda rows: (
                TopicStatusSerializer(
                    topic_statuses(
                        contact=contact, topics=[row for row in rows if isinstance(row, Topic)]
                    ),
                    many=True,
                ).data
            ),
        )

    @extend_schema(
        request=SubscriptionsSetSerializer,
        responses={200: TopicStatusSerializer(many=True)},
        operation_id="contact_subscriptions_set",
    )
    def put(self, request: Request, contact_id: uuid.UUID) -> Response:
        body = self.validated(SubscriptionsSetSerializer)
        statuses = subscriptions_set(
            project=self.project,
            contact_id=contact_id,
            changes=body["topics"],
            source=body.get("source", SubscriptionSource.API),
        )
        return Response(TopicStatusSerializer(statuses, many=True).data)
