import factory
from factory.django import DjangoModelFactory

from messaging.models import Suppression, SuppressionReason
from tests.factories import ProjectFactory


class SuppressionFactory(DjangoModelFactory):
    class Meta:
        model = Suppression

    project = factory.SubFactory(ProjectFactory)
    email = factory.Sequence(lambda n: f"suppressed{n}@example.com")
    reason = SuppressionReason.MANUAL
