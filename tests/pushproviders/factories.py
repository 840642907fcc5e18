import factory
from factory.django import DjangoModelFactory

from config import clock
from pushproviders.models import Platform, PushApp, PushInstallation, PushProvider
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
