"""Reading the rows a batch of advances works on (runs, their contacts, timelines and
waits), on PostgreSQL, and making the rows it adds, without Django's per-row machinery.

A batch of 500 resumed waits reads some 1,500 rows. Through the ORM most of that cost
was turning them into instances: `Model.__init__` sets each field through its descriptor,
and the text results parse every timestamp and UUID. Here the rows come in binary
(`config.bulk.rows_fetch`: timestamps aware, UUIDs and JSON as Python values) and become
instances by filling their `__dict__`, as `Model.from_db` would leave them (all
concrete fields loaded, `adding` false). The project connects no `pre_init` or
`post_init` receiver, which that skips; fields that convert values read from the
database (`from_db_value`, other than a JSON field's default decoding) are refused.
"""

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connection, models
from django.db.models.base import ModelState

from config.fresh import Fresh

__all__ = ["Columns", "Fresh", "cache_related"]

M = TypeVar("M", bound=models.Model)


class Columns(Generic[M]):
    """A model's concrete columns in a select list under a table alias, and how one row's
    values (a slice of a result row, in that order) become an instance."""

    def __init__(self, model: type[M], alias: str) -> None:
        quote = connection.ops.quote_name
        fields = list(model._meta.concrete_fields)
        for field in fields:
            plain_json = isinstance(field, models.JSONField) and field.decoder is None
            if hasattr(field, "from_db_value") and not plain_json:
                raise TypeError(f"{model.__name__}.{field.name} converts what it reads.")
        self.model = model
        self.attnames = [field.attname for field in fields]
        self.width = len(fields)
        self.select = ", ".join(f"{alias}.{quote(field.column)}" for field in fields)
        self.db = connection.alias

    def make(self, values: Sequence[Any]) -> M:
        instance = self.model.__new__(self.model)
        instance.__dict__.update(zip(self.attnames, values, strict=True))
        state = ModelState()
        state.adding = False
        state.db = self.db
        instance._state = state
        return instance

    def make_all(self, rows: Iterable[Sequence[Any]]) -> list[M]:
        return [self.make(row) for row in rows]


def cache_related(instance: models.Model, name: str, value: models.Model | None) -> None:
    """Sets what `instance.<name>` (a foreign key whose id the instance holds) returns,
    as `select_related` would, without the descriptor's checks."""
    instance._state.fields_cache[name] = value
