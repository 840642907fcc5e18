import factory
from factory.django import DjangoModelFactory

from config.runtime import clock
from config.workqueue.models import WorkStatus
from pushproviders.models import (
    Platform,
    PushApp,
    PushDelivery,
    PushDeliveryState,
    PushInstallation,
    PushMessage,
    PushProvider,
)
from pushproviders.services.installations import token_digest
from tests.factories import ProjectFactory


class PushAppFactory(DjangoModelFactory):
    class Meta:
        model = PushApp

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"App {n}")
    public_id = factory.Sequence(lambda n: f"app_{n:016x}")


class PushProviderFactory(DjangoModelFactory):
    """A provider with no settings yet (not ready)."""

    class Meta:
        model = PushProvider

    app = factory.SubFactory(PushAppFactory)
    project = factory.SelfAttribute("app.project")
    name = "Firebase"
    platform = Platform.FCM


class PushInstallationFactory(DjangoModelFactory):
    class Meta:
        model = PushInstallation

    app = factory.SubFactory(PushAppFactory)
    project = factory.SelfAttribute("app.project")
    contact = factory.SubFactory(
        "tests.contacts.factories.ContactFactory", project=factory.SelfAttribute("..project")
    )
    platform = Platform.FCM
    token = factory.Sequence(lambda n: f"fcm-token-{n:06d}-abcdefghijklmnop")
    token_digest = factory.LazyAttribute(lambda o: token_digest(o.token))
    last_seen_at = factory.LazyFunction(clock.now)


class PushMessageFactory(DjangoModelFactory):
    class Meta:
        model = PushMessage

    app = factory.SubFactory(PushAppFactory)
    project = factory.SelfAttribute("app.project")
    title = "Order shipped"
    body = "It is on its way."


class PushDeliveryFactory(DjangoModelFactory):
    """A queued delivery; `dead=True` makes it failed and dead-lettered."""

    class Meta:
        model = PushDelivery

    message = factory.SubFactory(PushMessageFactory)
    message_created_at = factory.SelfAttribute("message.created_at")
    installation = factory.SubFactory(
        PushInstallationFactory,
        app=factory.SelfAttribute("..message.app"),
        project=factory.SelfAttribute("..message.project"),
    )
    contact = factory.SelfAttribute("installation.contact")
    platform = factory.SelfAttribute("installation.platform")
    title = factory.SelfAttribute("message.title")
    body = factory.SelfAttribute("message.body")
    next_attempt_at = factory.LazyFunction(clock.now)

    class Params:
        dead = factory.Trait(
            state=PushDeliveryState.FAILED,
            status=WorkStatus.DEAD_LETTERED,
            next_attempt_at=None,
            error="FCM answered 503 UNAVAILABLE.",
            last_error="PushSendError: FCM answered 503 UNAVAILABLE.",
            error_code="fcm_unavailable",
            attempts=8,
        )
