"""Retention of emails: no policy yet, so none is purged and the partition kit
(config/db/partitions.py) keeps every partition of their table, which is partitioned by
`Email.created_at`."""


def emails_retention_days() -> int | None:
    """How long emails are kept: no policy yet (None), so every partition stays."""
    return None
