"""New model instances without `Model.__init__`'s per-field work, for services that make
rows by the hundred per batch (automation runs and steps, the emails they send)."""

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import models
from django.db.models.base import ModelState

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
        instance = self.model.__new__(self.model)
        state = ModelState()
        instance._state = state
        attributes = instance.__dict__
        given = 0
        for name, attname, related, make, fixed in self.fields:
            if related and name in values:
                target = values[name]
                attributes[attname] = None if target is None else target.pk
                state.fields_cache[name] = target
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
