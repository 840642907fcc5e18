"""No write to the busiest tables maintains an index that another index already covers: on
the tables cleaned of them, no plain index (not unique, not partial) has columns that lead
another index of the same table (a foreign key declared with Django's default `db_index`
would bring one back). And a partition the kit makes later has exactly its parent's
indexes, so none comes back that way either."""

import datetime as dt

import pytest
from django.db import connection

from config.db.partitions import partitions_make
from config.registries.partitions import partitioned_tables

pytestmark = pytest.mark.django_db

# Partitioned ones included: the check reads their partitions too.
CLEANED = (
    "events_event",
    "events_eventtype",
    "contacts_contact",
    "audiences_audience",
    "audiences_audiencemembership",
    "topics_topic",
    "topics_subscription",
    "webhooks_webhookdelivery",
    "messaging_suppression",
    "messaging_templateversion",
    "messaging_campaignfanout",
    "pushproviders_pushdelivery",
    "imports_import",
    "imports_importrow",
    "imports_importchunk",
    "automations_automationversion",
    "tenancy_usageday",
)

# Index `a` is covered by index `b` of the same table when `a` is a plain index and its
# columns (`indkey`, as text: "5 3 1") are all of `b`'s or lead them.
_COVERED = """
WITH idx AS (
    SELECT i.indrelid::regclass::text AS tbl, i.indexrelid::regclass::text AS idx,
        i.indkey::text AS cols, i.indisunique AS u, i.indpred IS NOT NULL AS partial,
        coalesce(pg_partition_root(i.indrelid), i.indrelid)::regclass::text AS root
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
)
SELECT a.tbl, a.idx, b.idx FROM idx a JOIN idx b ON a.tbl = b.tbl AND a.idx <> b.idx
WHERE NOT a.u AND NOT a.partial AND NOT b.partial
    AND (b.cols = a.cols OR b.cols LIKE a.cols || ' %%') AND a.root = ANY(%s)
ORDER BY 1, 2, 3
"""

# A table's indexes, each with the index of the parent table it is attached to.
_INDEXES = """
SELECT i.indexrelid::regclass::text, p.inhparent::regclass::text
FROM pg_index i LEFT JOIN pg_inherits p ON p.inhrelid = i.indexrelid
WHERE i.indrelid = to_regclass(%s)
"""


def _rows(sql: str, params: list[object]) -> list[tuple[str, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def test_no_plain_index_of_a_cleaned_table_leads_another_index_of_it():
    assert _rows(_COVERED, [list(CLEANED)]) == []


def test_a_partition_made_later_has_exactly_its_parents_indexes():
    for declared in partitioned_tables():
        [made] = partitions_make(
            declared.table,
            declared.column,
            now=dt.datetime(2040, 1, 15, tzinfo=dt.UTC),
            ahead=0,
            interval="month",
            storage=declared.storage,
        )
        parents = sorted(name for name, _ in _rows(_INDEXES, [declared.table]))
        attached = _rows(_INDEXES, [made])

        assert sorted(parent for _, parent in attached) == parents, declared.table
    assert _rows(_COVERED, [list(CLEANED)]) == []
