import uuid

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock, secrets
from config.workqueue.models import WorkStatus
from tests.factories import ProjectFactory
from webhooks.models import DeliveryState, WebhookDelivery, WebhookEndpoint
from webhooks.signing import secret_new


class WebhookEndpointFactory(DjangoModelFactory):
    class Meta:
        model = WebhookEndpoint

    project = factory.SubFactory(ProjectFactory)
    url = factory.Sequence(lambda n: f"https://hooks{n}.example.com/in")
    event_types = factory.LazyFunction(lambda: ["*"])
    secret = factory.LazyFunction(lambda: secrets.encrypt(secret_new()))


class WebhookDeliveryFactory(DjangoModelFactory):
    """A pending delivery, due now; `dead` for one whose retries ran out."""

    class Meta:
        model = WebhookDelivery

    endpoint = factory.SubFactory(WebhookEndpointFactory)
    project = factory.SelfAttribute("endpoint.project")
    event_id = factory.LazyFunction(uuid.uuid4)
    event_type = "order_placed"
    webhook_id = factory.LazyAttribute(lambda delivery: f"msg_{delivery.event_id.hex}")
    body = '{"type":"order_placed","timestamp":"2026-01-01T00:00:00Z","data":{}}'
    next_attempt_at = factory.LazyFunction(clock.now)

    class Params:
        dead = factory.Trait(
            status=WorkStatus.DEAD_LETTERED,
            state=DeliveryState.FAILED,
            attempts=22,
            attempt_count=22,
            last_status_code=500,
            error="HTTP 500",
            next_attempt_at=None,
        )
