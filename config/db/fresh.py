"""Model instances without `Model.__init__`'s per-field work, for services that make or
read rows by the hundred per batch (automation runs and steps, the emails they send, the
rows a work queue claims): new ones (`Fresh`) and ones read from the database
(`Columns`)."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connection, models

from config.libinternals import instance_blank, related_cache

M = TypeVar("M", bound=models.Model)


class Fresh(Generic[M]):
    """New instances of a model, as `Model(**values)` makes them (defaults for what is not
    given, `adding` true), without its per-field work: an advance makes a timeline row per
    step, and `__init__` with a related instance (`run=...`) also asked the database
    routers whether the relation is allowed, which cost more than the rest of the step.
    A related field is given by name as an instance (or None) or by attname as a key."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        # Each field's default: made per instance when callable (`uuid.uuid4`, the clock),
        # else one value (None, "", a number) worked out once.
        self.fields: list[tuple[str, str, bool, Callable[[], Any] | None, Any]] = []
        for field in model._meta.concrete_fields:
            make = field.default if field.has_default() and callable(field.default) else None
            fixed = None if make is not None else field.get_default()
            self.fields.append((field.name, field.attname, field.is_relation, make, fixed))

    def make(self, **values: Any) -> M:
        instance = instance_blank(self.model)
        cache = related_cache(instance)
        attributes = instance.__dict__
        given = 0
        for name, attname, related, make, fixed in self.fields:
            if related and name in values:
                target = values[name]
                attributes[attname] = None if target is None else target.pk
                cache[name] = target
                given += 1
            elif attname in values:
                attributes[attname] = values[attname]
                given += 1
            else:
                attributes[attname] = fixed if make is None else make()
        if given != len(values):
            known = {name for name, *_ in self.fields} | {a for _, a, *_ in self.fields}
            raise TypeError(f"{self.model.__name__} has no field {sorted(set(values) - known)}.")
        return instance


class Columns(Generic[M]):
    """A model's concrete columns in a select list under a table alias, and how one row's
    values (a slice of a result row, in that order, read in binary by
    `config.db.bulk.rows_fetch`) become an instance: its `__dict__` filled as `Model.from_db`
    would leave it (all concrete fields loaded, `adding` false). The project connects no
    `pre_init` or `post_init` receiver, which that skips; a model with fields that convert
    what they read (`from_db_value`, other than a JSON field's default decoding) is
    refused (`TypeError`)."""

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
        instance = instance_blank(self.model, db=self.db)
        instance.__dict__.update(zip(self.attnames, values, strict=True))
        return instance

    def make_all(self, rows: Iterable[Sequence[Any]]) -> list[M]:
        return [self.make(row) for row in rows]
