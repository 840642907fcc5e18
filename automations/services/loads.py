"""Reading the rows a batch of advances works on (runs, their contacts, timelines and
waits), on PostgreSQL, and making the rows it adds, without Django's per-row machinery.

A batch of 500 resumed waits reads some 1,500 rows. Through the ORM most of that cost
was turning them into instances: `Model.__init__` sets each field through its descriptor,
and the text results parse every timestamp and UUID. Here the rows come in binary
(`config.db.bulk.rows_fetch`: timestamps aware, UUIDs and JSON as Python values) and become
instances by filling their `__dict__` (`config.db.fresh.Columns`).
"""

from django.db import models

from config.db.fresh import Columns, Fresh
from config.libinternals import related_cache

__all__ = ["Columns", "Fresh", "cache_related"]


def cache_related(instance: models.Model, name: str, value: models.Model | None) -> None:
    """Sets what `instance.<name>` (a foreign key whose id the instance holds) returns,
    as `select_related` would, without the descriptor's checks."""
    related_cache(instance)[name] = value
