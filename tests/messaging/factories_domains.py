import functools
from typing import Any

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock, secrets
from messaging.models import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.services.domains import _records_for, dkim_key_pair
from tests.factories import ProjectFactory


@functools.cache
def key_pair() -> tuple[str, str]:
    """One 2048-bit key for every factory-made domain: generating one per test is slow."""
    return dkim_key_pair()


class DomainFactory(DjangoModelFactory):
    """A domain with its three records; `verified=True` as after a successful check."""

    class Meta:
        model = Domain
        skip_postgeneration_save = True

    class Params:
        verified = factory.Trait(
            status=DomainStatus.VERIFIED,
            checked_at=factory.LazyFunction(clock.now),
            verified_at=factory.LazyFunction(clock.now),
        )

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"mail{n}.example.com")
    dkim_selector = factory.Sequence(lambda n: f"sr{n:08x}")
    dkim_private_key_encrypted = factory.LazyFunction(lambda: secrets.encrypt(key_pair()[0]))

    @factory.post_generation
    def records(obj: Domain, create: bool, extracted: Any, **kwargs: Any) -> None:
        if not create:
            return
        records = _records_for(obj, key_pair()[1])
        if obj.status == DomainStatus.VERIFIED:
            for record in records:
                record.status = DomainStatus.VERIFIED
        DomainRecord.objects.bulk_create(records)


def record_of(domain: Domain, purpose: RecordPurpose) -> DomainRecord:
    return domain.records.get(purpose=purpose)
