"""Factories for imports: the records behind the staff console (the API makes real ones)."""

import factory
from factory.django import DjangoModelFactory

from config.runtime import clock
from imports.models import Import, ImportChunk, ImportSource
from tests.factories import ProjectFactory


class ImportFactory(DjangoModelFactory):
    class Meta:
        model = Import

    project = factory.SubFactory(ProjectFactory)
    source = ImportSource.CSV
    filename = factory.Sequence(lambda n: f"contacts-{n}.csv")
    mapping = factory.LazyFunction(lambda: {"Email": "email"})
    email_normalization = "plain"


class ImportChunkFactory(DjangoModelFactory):
    class Meta:
        model = ImportChunk

    import_record = factory.SubFactory(ImportFactory)
    first_row = 1
    last_row = 5000
    planned_rows = 5000
    digest = "0" * 32

    class Params:
        dead = factory.Trait(
            status="dead_lettered", attempts=5, last_error="RuntimeError: boom", error_code="x"
        )
        due = factory.Trait(next_attempt_at=factory.LazyFunction(clock.now))
