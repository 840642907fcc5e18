"""Retention of push deliveries: no policy yet, so none is purged and the partition kit
(config/db/partitions.py) keeps every partition of their table, which is partitioned by
the time of their message (`PushDelivery.message_created_at`)."""


def push_deliveries_retention_days() -> int | None:
    """How long push deliveries are kept: no policy yet (None), so every partition stays."""
    return None
