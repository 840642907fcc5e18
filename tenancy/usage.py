"""Usage metering per project and day, and the monthly quotas of a team's plan.

Counting never writes a database row per request. With Redis (every deployment; the
cache's server):

- Counts recorded after a commit (`usage_record`) go to a per-process buffer, and a
  thread of the process adds them to Redis once a second (`USAGE_FLUSH_SECONDS`): one
  script call per flush, whatever the traffic. A process killed outright loses at most
  its last unflushed second.
- Each project's day is a Redis hash (`usage:d:<project>:<date>`, one field per meter);
  each team's month is another (`usage:m:<team>:<month>`), which the quota check reads.
- A quota check (`usage_reserve`) is one script call that compares the team's month
  with the plan and counts the request in the same step, so concurrent requests never
  pass a limit together. What the write then does not use (duplicates, failures) is
  given back.
- Beat folds the day hashes into `UsageDay` rows (`usage_fold`): a day hash is renamed
  to a fold key first (new counts start a fresh hash), added to its row in a transaction
  that also records the fold key's token, and only then dropped, so a fold retried after
  a crash finds its token and adds nothing twice.
- Reads (`usage_days`) add what is not folded yet to the rows, so counts include the
  current day.

Sends are metered when the transport accepted them (emails_sent, push_sent), but their
quota must stop requests before anything is stored: for those two meters the quota
check counts the sends the API accepted in a field of its own (`q:<meter>`), so a send
that is queued counts against the month once, whether or not it is delivered later.
"""

import datetime as dt
import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, cast

import redis
from django.db import transaction
from django.db.models import Sum

from config.runtime import clock
from config.runtime.buffered import BufferedWriter
from config.runtime.redisclient import redis_client
from tenancy import conf
from tenancy.errors import PlanLimitExceeded
from tenancy.models import Meter, Project, UsageDay
from tenancy.selectors import plan_terms_get

logger = logging.getLogger(__name__)

METERS: tuple[str, ...] = tuple(Meter.values)
# Meters recorded when the work is done, later than the request: their quota counts what
# the API accepted, in a field of its own.
ACCEPTANCE_FIELDS = {Meter.EMAILS_SENT.value: "q:emails_sent", Meter.PUSH_SENT.value: "q:push_sent"}
DIRTY = "usage:dirty"
# Marks a team's month hash as holding the month's folded counts too (see _seed).
SEEDED = "seeded"
MONTH_TTL_SECONDS = 62 * 86400
# The longest range GET /project/usage answers.
MAX_RANGE_DAYS = 366


def day_key(project_id: str, day: dt.date) -> str:
    return f"usage:d:{project_id}:{day.isoformat()}"


def month_key(team_id: str, day: dt.date) -> str:
    return f"usage:m:{team_id}:{day:%Y-%m}"


def readers_key(project_id: str) -> str:
    return f"usage:fk:{project_id}"


def month_start(day: dt.date) -> dt.date:
    return day.replace(day=1)


def next_month_start(day: dt.date) -> dt.date:
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def today() -> dt.date:
    return clock.now().astimezone(dt.UTC).date()


# --- scripts (each one round trip, atomic on the server) ----------------------------------

# KEYS: dirty set. ARGV: groups of (day key, month key, meter, count). Returns the month
# keys not seeded yet; their groups were skipped.
_FLUSH = """
local missing = {}
for i = 1, #ARGV, 4 do
  local day, month, meter, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  if redis.call('HEXISTS', month, 'seeded') == 0 then
    missing[#missing + 1] = month
  else
    redis.call('HINCRBY', month, meter, n)
    redis.call('HINCRBY', day, meter, n)
    redis.call('SADD', KEYS[1], day)
  end
end
return missing
"""

# KEYS: month, day, dirty. ARGV: quota field, count, limit (-1: none), meter to record on
# the day too ('' for none). Returns {1, used} when counted, {0, used} when over the
# limit, {-1, 0} when the month is not seeded.
_RESERVE = """
if redis.call('HEXISTS', KEYS[1], 'seeded') == 0 then return {-1, 0} end
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
if limit >= 0 and n > 0 and used + n > limit then return {0, used} end
redis.call('HINCRBY', KEYS[1], ARGV[1], n)
if ARGV[4] ~= '' then
  if ARGV[4] ~= ARGV[1] then redis.call('HINCRBY', KEYS[1], ARGV[4], n) end
  redis.call('HINCRBY', KEYS[2], ARGV[4], n)
  redis.call('SADD', KEYS[3], KEYS[2])
end
return {1, used + n}
"""

# KEYS: month. ARGV: ttl, then (field, count) pairs: the month's folded counts, added
# once (the first caller sets `seeded`).
_SEED = """
if redis.call('HSETNX', KEYS[1], 'seeded', '1') == 1 then
  for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], tonumber(ARGV[i + 1])) end
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return 1
"""

_scripts: dict[tuple[int, str], Any] = {}


def _script(client: redis.Redis, source: str) -> Any:
    """A registered script (EVALSHA, loaded on first use) for this client."""
    key = (id(client), source)
    if key not in _scripts:
        _scripts[key] = client.register_script(source)
    return _scripts[key]


# --- the database side -------------------------------------------------------------------


def _month_totals_folded(team_id: str, day: dt.date) -> dict[str, int]:
    totals = UsageDay.objects.filter(
        project__team_id=team_id,
        date__gte=month_start(day),
        date__lt=next_month_start(day),
    ).aggregate(**{meter: Sum(meter) for meter in METERS})
    return {meter: int(totals[meter] or 0) for meter in METERS}


# --- recording after commit --------------------------------------------------------------


UsageKey = tuple[str, str, dt.date, str]


def _summed(items: list[tuple[UsageKey, int]]) -> list[tuple[UsageKey, int]]:
    """The counts of each project, day and meter added up: what a failed flush keeps."""
    counts: dict[UsageKey, int] = defaultdict(int)
    for key, count in items:
        counts[key] += count
    return list(counts.items())


def _write(items: list[tuple[UsageKey, int]]) -> None:
    _flush(dict(_summed(items)))


_buffer: BufferedWriter[tuple[UsageKey, int]] = BufferedWriter(
    name="usage-flush", write=_write, interval=conf.usage_flush_seconds, compact=_summed
)


def usage_record(*, project: Project, meter: str, count: int = 1) -> None:
    """Counts `count` of `meter` for the project today, once the current transaction
    commits (at once outside one). Costs no round trip: the process flushes every second."""
    if count == 0 or not conf.usage_metering():
        return
    item = ((str(project.id), str(project.team_id), today(), str(meter)), count)
    transaction.on_commit(lambda: _buffer.add(item))


def usage_flush() -> None:
    """Adds this process's buffered counts to the shared counters now."""
    _buffer.flush()


def _flush(counts: dict[UsageKey, int]) -> None:
    client = redis_client()
    args: list[Any] = []
    groups: dict[str, list[Any]] = defaultdict(list)
    for (project_id, team_id, day, meter), count in counts.items():
        month = month_key(team_id, day)
        group = [day_key(project_id, day), month, meter, count]
        groups[month].extend(group)
        args.extend(group)
    flush = _script(client, _FLUSH)
    missing = flush(keys=[DIRTY], args=args)
    if not missing:
        return
    retry: list[Any] = []
    for raw in set(missing):
        month = raw.decode() if isinstance(raw, bytes) else str(raw)
        _seed(client, month)
        retry.extend(groups[month])
    still = flush(keys=[DIRTY], args=retry)
    if still:
        raise RuntimeError(f"Usage months could not be seeded: {still!r}")


def _seed(client: redis.Redis, month: str) -> None:
    """Starts a team's month hash from the month's folded counts (zero in a new month;
    after a loss of Redis, what had been folded before it)."""
    _, _, team_id, period = month.split(":")
    day = dt.date.fromisoformat(f"{period}-01")
    folded = _month_totals_folded(team_id, day)
    args: list[Any] = [MONTH_TTL_SECONDS]
    for meter, value in folded.items():
        args.extend([meter, value])
        if meter in ACCEPTANCE_FIELDS:
            args.extend([ACCEPTANCE_FIELDS[meter], value])
    _script(client, _SEED)(keys=[month], args=args)


# --- quotas -------------------------------------------------------------------------------


@dataclass
class Reservation:
    """Usage counted against a quota before the write that uses it: `settle` keeps what
    the write used and gives back the rest; leaving its `with` block on an error gives
    back everything."""

    project: Project
    meter: str
    count: int
    limited: bool
    settled: bool = False

    def settle(self, used: int | None = None) -> None:
        if self.settled:
            return
        self.settled = True
        used = self.count if used is None else min(max(used, 0), self.count)
        if not self.limited:
            if self.meter not in ACCEPTANCE_FIELDS:
                usage_record(project=self.project, meter=self.meter, count=used)
            return
        unused = self.count - used
        if unused:
            _give_back(self.project, self.meter, unused)

    def release(self) -> None:
        self.settle(0)

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if kind is not None:
            self.release()
        else:
            self.settle()


def reset_at(day: dt.date) -> dt.datetime:
    """When a month's quotas start again: the next month's first instant, UTC."""
    return dt.datetime.combine(next_month_start(day), dt.time(), tzinfo=dt.UTC)


def _over(meter: str, limit: int, used: int, count: int, plan: str, day: dt.date) -> Exception:
    left = max(limit - used, 0)
    return PlanLimitExceeded(
        f"The plan's monthly limit of `{meter}` is reached.",
        details=(
            f"meter {meter}; limit {limit} per month (plan {plan}); used {used}, "
            f"{left} left, {count} asked; resets at {clock.iso_utc(reset_at(day))}."
        ),
    )


def usage_reserve(*, project: Project, meter: str, count: int = 1) -> Reservation:
    """Counts `count` of `meter` against the team's monthly quota before the write, or
    raises PlanLimitExceeded (422) with the meter, limit and reset time when it would go
    past it. Use it as a context manager around the write, and `settle(used)` when the
    write used fewer (duplicates). Unlimited meters only record what was used, after
    commit. Redis unreachable: the check lets the request through (logged)."""
    if not conf.usage_metering():
        return Reservation(project=project, meter=meter, count=0, limited=False)
    terms = plan_terms_get(team_id=str(project.team_id))
    limit = terms.quota(meter)
    if limit is None or count <= 0:
        return Reservation(project=project, meter=meter, count=max(count, 0), limited=False)
    day = today()
    client = redis_client()
    try:
        outcome, used = _reserve(client, project, meter, count, limit, day)
    except redis.RedisError:
        logger.warning("The quota of %s could not be checked; letting it pass", meter)
        return Reservation(project=project, meter=meter, count=count, limited=False)
    if outcome == 0:
        raise _over(meter, limit, used, count, terms.name, day)
    return Reservation(project=project, meter=meter, count=count, limited=True)


def _reserve(
    client: redis.Redis, project: Project, meter: str, count: int, limit: int, day: dt.date
) -> tuple[int, int]:
    month = month_key(str(project.team_id), day)
    keys = [month, day_key(str(project.id), day), DIRTY]
    quota_field = ACCEPTANCE_FIELDS.get(meter, meter)
    record = "" if meter in ACCEPTANCE_FIELDS else meter
    reserve = _script(client, _RESERVE)
    for _ in range(2):
        outcome, used = reserve(keys=keys, args=[quota_field, count, limit, record])
        if outcome != -1:
            return int(outcome), int(used)
        _seed(client, month)
    raise redis.RedisError("The month could not be seeded.")


def _give_back(project: Project, meter: str, count: int) -> None:
    client = redis_client()
    day = today()
    try:
        _reserve(client, project, meter, -count, -1, day)
    except redis.RedisError:
        logger.warning("Giving back %d of %s failed", count, meter)


def usage_month_used(*, project: Project, meter: str) -> int:
    """What the team used of a quota this month (acceptances, for sends)."""
    day = today()
    client = redis_client()
    usage_flush()
    month = month_key(str(project.team_id), day)
    if not client.hexists(month, SEEDED):
        _seed(client, month)
    raw = client.hget(month, ACCEPTANCE_FIELDS.get(meter, meter))
    return int(cast(bytes, raw) or 0)
