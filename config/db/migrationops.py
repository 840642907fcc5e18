"""Migration operations that apps' migrations share."""

from typing import Any

from django.db import migrations, models


def covered_index_dropped(
    *,
    model_name: str,
    name: str,
    field: "models.Field[Any, Any]",
    index: str,
    table: str,
    column: str,
) -> migrations.SeparateDatabaseAndState:
    """Drops the single-column index Django made for a foreign key (`index`, on `table`'s
    `column`) where another index leads with the same column and serves every lookup by
    it, so each insert maintains one index fewer.

    Django's state takes `field` (the key with `db_index=False`); the database runs only
    `DROP INDEX` (Django's own AlterField would also drop and re-add the foreign key, which
    checks every row again under a lock). Dropping a partitioned table's index drops every
    partition's, and partitions made later get only the parent's indexes. Reversed, the
    index is made again."""
    return migrations.SeparateDatabaseAndState(
        state_operations=[migrations.AlterField(model_name=model_name, name=name, field=field)],
        database_operations=[
            migrations.RunSQL(
                f'DROP INDEX IF EXISTS "{index}"',
                reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("{column}")',
            )
        ],
    )
