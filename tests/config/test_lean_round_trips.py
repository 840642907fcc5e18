"""What an API request costs in Redis round trips, as deployed (the limiter and the meter
on): the rate limiter takes room for several requests at once, the meter counts in the
process and flushes in the background, and a settled key is remembered per process, so a
steady stream of requests costs far less than one round trip each. Counted on the real
Redis connections, every command (workers' wake-ups included)."""

import collections
import uuid
from typing import Any

import pytest
import redis.connection
from django.core.handlers.wsgi import WSGIHandler

from config.api.lean import LeanFront
from tests.config.test_lean import EVENT, call, environ

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = 40
# Sent when a connection is opened, once per connection: not a request's cost.
HANDSHAKE = (b"HELLO", b"CLIENT", b"SELECT", b"PING")


@pytest.fixture
def commands(monkeypatch):
    sent: collections.Counter[bytes] = collections.Counter()
    real = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        packed = b"".join(command) if isinstance(command, list) else bytes(command)
        # RESP: `*<n>\r\n$<len>\r\n<NAME>\r\n...`; a pipeline is one send.
        name = packed.split(b"\r\n", 3)[2].upper()
        if name not in HANDSHAKE:
            sent[name] += 1
        real(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    return sent


@pytest.mark.parametrize("kind", ["event", "project", "contact"])
def test_a_stream_of_requests_costs_less_than_one_redis_round_trip_each(
    world, settings, commands, kind
):
    settings.API_RATE_LIMIT = 1000
    front = LeanFront(WSGIHandler())
    key = world.keys["project"]
    made = call(front, environ("POST", "/contacts/upsert", key=key, body={"email": "a@x.io"}))
    contact_id = made.json()["data"]["id"]

    def request() -> dict[str, Any]:
        if kind == "event":
            body = {**EVENT, "idempotency_key": uuid.uuid4().hex}
            return environ("POST", "/events", key=key, body=body)
        if kind == "project":
            return environ("GET", "/project", key=key)
        return environ("GET", f"/contacts/{contact_id}", key=key)

    call(front, request())
    commands.clear()
    per_request = []
    for _ in range(REQUESTS):
        before = sum(commands.values())
        answer = call(front, request())
        assert answer.status[:3] in {"200", "202"}, answer.body
        per_request.append(sum(commands.values()) - before)
    served = request()
    assert front.match(served["REQUEST_METHOD"], served["PATH_INFO"]) is not None
    # The limiter leases room for 10 requests (1 % of 1,000 a second) per round trip.
    assert sum(per_request) <= REQUESTS // 2, (per_request, commands)
    assert per_request.count(0) >= REQUESTS // 2, per_request
