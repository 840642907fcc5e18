"""The one way services change some fields of a row (`model_update`)."""

from collections.abc import Mapping
from typing import Any

from django.db import models


def model_update(instance: models.Model, *, fields: Mapping[str, Any]) -> list[str]:
    """Sets the `fields` whose value differs and saves only those, plus any `auto_now`
    timestamp (`updated_at`); returns the names that changed. Nothing changed: no write."""
    changed = [name for name, value in fields.items() if getattr(instance, name) != value]
    if not changed:
        return []
    for name in changed:
        setattr(instance, name, fields[name])
    stamped = [
        field.name
        for field in instance._meta.concrete_fields
        if getattr(field, "auto_now", False) and field.name not in changed
    ]
    instance.save(update_fields=[*changed, *stamped])
    return changed
