"""The constraints every versioned resource's version table carries (message templates,
automations): version numbers unique per parent, and at most one draft and one published
version per parent."""

from django.db import models


def version_constraints(
    *, parent: str, number_name: str, prefix: str, draft: str, published: str
) -> list[models.BaseConstraint]:
    """The version table's constraints: `parent` is its foreign key to the versioned row,
    `number_name` the name of the unique version number, `prefix` that of the other two,
    and `draft` and `published` the `state` values there is at most one of per parent."""
    return [
        models.UniqueConstraint(fields=[parent, "version_number"], name=number_name),
        # Edits, publishes and restores race on these two: a second draft or a second
        # published version cannot exist even if a lock were forgotten.
        models.UniqueConstraint(
            fields=[parent],
            condition=models.Q(state=draft),
            name=f"{prefix}_one_draft",
        ),
        models.UniqueConstraint(
            fields=[parent],
            condition=models.Q(state=published),
            name=f"{prefix}_one_published",
        ),
    ]
