"""The tool-call audit is partitioned by the time of the call: a call at any time is kept,
its partition made by the maintenance task, and no partition of it is ever dropped while
the audit has no retention policy."""

import datetime as dt
import uuid

import pytest
from django.db import connection

from agent.models import ToolCall
from config.celery import maintain_partitions
from config.db.partitions import partition_name, partitions_list

pytestmark = pytest.mark.django_db


def _call(at: dt.datetime) -> ToolCall:
    return ToolCall.objects.create(
        api_key_id=uuid.uuid4(),
        tool="contacts_list",
        outcome="ok",
        status=200,
        duration_ms=1.5,
        created_at=at,
    )


def _partition_of(call: ToolCall) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tableoid::regclass::text FROM agent_toolcall WHERE id = %s", [call.id]
        )
        return str(cursor.fetchone()[0])


def test_old_and_future_calls_are_kept_in_their_partitions_and_none_is_dropped(clock):
    old = _call(dt.datetime(2016, 3, 5, tzinfo=dt.UTC))
    future = _call(dt.datetime(2031, 7, 9, tzinfo=dt.UTC))
    assert _partition_of(old) == _partition_of(future) == "agent_toolcall_default"

    clock.set(dt.datetime(2036, 1, 1, tzinfo=dt.UTC))
    result = maintain_partitions()["agent_toolcall"]

    assert result["dropped"] == []
    assert _partition_of(old) == partition_name(
        "agent_toolcall", dt.datetime(2016, 3, 1, tzinfo=dt.UTC)
    )
    assert _partition_of(future) == partition_name(
        "agent_toolcall", dt.datetime(2031, 7, 1, tzinfo=dt.UTC)
    )
    names = {partition.name for partition in partitions_list("agent_toolcall")}
    assert partition_name("agent_toolcall", dt.datetime(2036, 1, 1, tzinfo=dt.UTC)) in names
    assert ToolCall.objects.count() == 2
