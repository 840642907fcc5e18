"""Usage days: beat folds the live day counters into `UsageDay` rows (`usage_fold`), and
reads (`usage_days`) add what is not folded yet to the rows. The counters themselves, and
the quotas, are usage.py's."""

import datetime as dt
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import redis
from django.db import IntegrityError, connection, transaction

from config.runtime import clock
from config.runtime.redisclient import redis_client
from tenancy.models import Project, UsageDay, UsageFold
from tenancy.usage import (
    DIRTY,
    METERS,
    _script,
    day_key,
    readers_key,
    usage_flush,
)

FOLDING = "usage:folding"
# How long a fold key stays readable after its counts were committed: readers that took
# their database snapshot before that commit still find the counts there.
FOLD_GRACE_SECONDS = 600
FOLD_BATCH = 1000

# KEYS: dirty, folding. ARGV: token prefix, how many, now (score). Renames dirty day hashes
# to fold keys (`<token>|<day key>`) and returns them.
_FOLD_CLAIM = """
local out = {}
for i = 1, tonumber(ARGV[2]) do
  local day = redis.call('SPOP', KEYS[1])
  if not day then break end
  if redis.call('EXISTS', day) == 1 then
    local fold = ARGV[1] .. ':' .. i .. '|' .. day
    redis.call('RENAME', day, fold)
    redis.call('SADD', KEYS[2], fold)
    local project = string.match(day, '^usage:d:([^:]+):')
    redis.call('ZADD', 'usage:fk:' .. project, tonumber(ARGV[3]), fold)
    out[#out + 1] = fold
  end
end
return out
"""

# KEYS: the project's day hashes, then its readers index. Returns {days, folds}: each day
# hash's fields, and the fold keys still readable with theirs.
_READ = """
local days = {}
for i = 1, #KEYS - 1 do days[i] = redis.call('HGETALL', KEYS[i]) end
local folds = {}
for _, fold in ipairs(redis.call('ZRANGE', KEYS[#KEYS], 0, -1)) do
  folds[#folds + 1] = fold
  folds[#folds + 1] = redis.call('HGETALL', fold)
end
return {days, folds}
"""

_COLUMNS = ", ".join(METERS)
_UPSERT = (
    # S608: names from the model.
    f"INSERT INTO {UsageDay._meta.db_table} (project_id, date, {_COLUMNS}) "  # noqa: S608
    f"VALUES (%s, %s, {', '.join(['%s'] * len(METERS))}) "
    "ON CONFLICT (project_id, date) DO UPDATE SET "
    + ", ".join(f"{m} = {UsageDay._meta.db_table}.{m} + excluded.{m}" for m in METERS)
)


def _rows_add(project_id: str, day: dt.date, counts: dict[str, int]) -> None:
    """Adds counts to a project's day row (created when missing), in the caller's
    transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            _UPSERT, [uuid.UUID(project_id), day, *(int(counts.get(m, 0)) for m in METERS)]
        )


# --- folding ------------------------------------------------------------------------------


def usage_fold(*, limit: int = FOLD_BATCH) -> int:
    """Moves the live day counters into UsageDay rows; returns how many hashes it folded.
    Safe to run concurrently and to retry after a crash at any point."""
    client = redis_client()
    now = clock.now()
    token = f"usage:f:{uuid.uuid4().hex}"
    _script(client, _FOLD_CLAIM)(keys=[DIRTY, FOLDING], args=[token, limit, now.timestamp()])
    # Every pending fold key: this run's, and any a crashed run left behind.
    folded = 0
    for raw in cast(set[bytes], client.smembers(FOLDING)):
        fold = raw.decode()
        if _fold_one(client, fold, now):
            folded += 1
        client.srem(FOLDING, fold)
        client.expire(fold, FOLD_GRACE_SECONDS)
    # Tokens only need to outlive the retry of a crashed fold (the next beat run).
    UsageFold.objects.filter(folded_at__lt=now - dt.timedelta(days=2)).delete()
    return folded


def fold_token(fold: str) -> str:
    return fold.partition("|")[0]


def fold_project(fold: str) -> str:
    return fold.partition("|")[2].split(":")[2]


def fold_date(fold: str) -> dt.date:
    return dt.date.fromisoformat(fold.partition("|")[2].split(":")[3])


def _fields(raw: Any) -> dict[str, int]:
    """A HGETALL answer (a dict, or a flat list from a script) as meter counts."""
    if isinstance(raw, dict):
        pairs = list(raw.items())
    else:
        pairs = list(zip(raw[::2], raw[1::2], strict=True))
    counts: dict[str, int] = {}
    for name, value in pairs:
        name = name.decode() if isinstance(name, bytes) else str(name)
        if name in METERS:
            counts[name] = int(value)
    return counts


def _fold_one(client: redis.Redis, fold: str, now: dt.datetime) -> bool:
    counts = _fields(client.hgetall(fold))
    project_id = fold_project(fold)
    client.zremrangebyscore(readers_key(project_id), "-inf", now.timestamp() - FOLD_GRACE_SECONDS)
    if not any(counts.values()):
        return False
    try:
        with transaction.atomic():
            UsageFold.objects.create(token=fold_token(fold), folded_at=now)
            _rows_add(project_id, fold_date(fold), counts)
    except IntegrityError:
        # Folded before a crash (the token exists), or the project is gone.
        return False
    return True


# --- reading ------------------------------------------------------------------------------


@contextmanager
def _snapshot() -> Iterator[None]:
    """One database snapshot for every query inside: the counts folded and the tokens of
    the folds are read as of one moment."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        # Inside a caller's transaction the isolation level is the caller's to choose.
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def usage_days(*, project: Project, start: dt.date, end: dt.date) -> dict[dt.date, dict[str, int]]:
    """Every day from `start` to `end` (inclusive) with its counts: the folded rows plus
    what is still live in Redis, so the current day is complete up to the last flush."""
    usage_flush()
    days = {
        start + dt.timedelta(days=n): dict.fromkeys(METERS, 0)
        for n in range((end - start).days + 1)
    }
    with _snapshot():
        for row in UsageDay.objects.filter(project=project, date__gte=start, date__lte=end).values(
            "date", *METERS
        ):
            for meter in METERS:
                days[row["date"]][meter] += int(row[meter])
        client = redis_client()
        project_id = str(project.id)
        keys = [day_key(project_id, day) for day in days]
        live, folds = _script(client, _READ)(keys=[*keys, readers_key(project_id)], args=[])
        for day, raw in zip(days, live, strict=True):
            for meter, count in _fields(raw).items():
                days[day][meter] += count
        pending = {
            (folds[i].decode() if isinstance(folds[i], bytes) else folds[i]): folds[i + 1]
            for i in range(0, len(folds), 2)
        }
        committed = set(
            UsageFold.objects.filter(token__in=[fold_token(fold) for fold in pending]).values_list(
                "token", flat=True
            )
        )
    for fold, raw in pending.items():
        day = fold_date(fold)
        if fold_token(fold) in committed or day not in days:
            continue
        for meter, count in _fields(raw).items():
            days[day][meter] += count
    return days
