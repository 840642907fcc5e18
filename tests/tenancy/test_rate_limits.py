"""Rate limits per key against real Redis: the headers on every authenticated answer, 429
with Retry-After, the sliding window, authentication first, exempt paths, and the
limits of teams and plans."""

import threading

import pytest

from config.runtime.redisclient import redis_client
from tenancy import ratelimit
from tenancy.access import KeyRecord
from tenancy.ratelimit import _leases, rate_limit_hit
from tenancy.selectors import api_key_record_get
from tenancy.services import team_plan_forget, team_plan_set
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads
from tests.factories import PlanFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def limit(settings):
    settings.API_RATE_LIMIT = 3
    return 3


def headers(response) -> tuple[str | None, str | None, str | None]:
    return (
        response.headers.get("RateLimit-Limit"),
        response.headers.get("RateLimit-Remaining"),
        response.headers.get("RateLimit-Reset"),
    )


def test_every_authenticated_answer_carries_the_rate_limit_headers(api, world, clock, settings):
    settings.API_RATE_LIMIT = 50
    key = world.keys["project"]

    ok = api.get("/project", key=key)
    missing = api.get("/contacts/3f2a0000-0000-0000-0000-000000000000", key=key)
    invalid = api.post("/events", {"event": "Bad"}, key=key)
    refused = api.post("/contacts/upsert", {"email": "a@b.co"}, key=world.keys["read_only"])

    assert (ok.status_code, headers(ok)) == (200, ("50", "49", "1"))
    assert (missing.status_code, headers(missing)) == (404, ("50", "48", "1"))
    assert (invalid.status_code, headers(invalid)) == (400, ("50", "47", "1"))
    assert (refused.status_code, headers(refused)) == (403, ("50", "49", "1"))


def test_a_key_over_its_limit_is_answered_429_with_retry_after(api, world, clock, limit):
    key = world.keys["project"]
    assert [api.get("/project", key=key).status_code for _ in range(3)] == [200, 200, 200]

    response = api.get("/project", key=key)

    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "rate_limited"
    assert "3 requests per second" in error["details"]
    assert response.headers["Retry-After"] == "1"
    assert headers(response) == ("3", "0", "1")
    # The limit is per key: another key of the same project still gets through.
    assert api.get("/project", key=world.keys["team"]).status_code == 200


def test_the_window_slides_over_the_last_second(api, world, clock, limit):
    key = world.keys["project"]
    for _ in range(3):
        api.get("/project", key=key)

    clock.advance(seconds=1.5)
    # Half of the previous second still counts: 1.5 + 1 fits in 3, 1.5 + 2 does not.
    assert api.get("/project", key=key).status_code == 200
    assert api.get("/project", key=key).status_code == 429

    clock.advance(seconds=2)
    assert [api.get("/project", key=key).status_code for _ in range(3)] == [200, 200, 200]


def test_unknown_keys_are_refused_before_any_limit(api, world, clock, settings):
    settings.API_RATE_LIMIT = 1

    responses = [api.get("/project", key="sr_unknown") for _ in range(5)]

    assert {response.status_code for response in responses} == {401}
    assert all(headers(response) == (None, None, None) for response in responses)


@pytest.mark.parametrize("path", ["/health", "/openapi.json", "/docs"])
def test_health_and_the_documentation_are_never_limited(api, world, clock, settings, path):
    settings.API_RATE_LIMIT = 1

    responses = [api.get(path, key=world.keys["project"]) for _ in range(4)]

    assert all(response.status_code in (200, 503) for response in responses)
    assert all(headers(response) == (None, None, None) for response in responses)


def test_a_plan_and_a_team_set_their_own_limits(api, world, clock, limit):
    key = world.keys["project"]
    team_plan_set(team=world.team, plan=PlanFactory(api_rate_limit=10))
    assert headers(api.get("/project", key=key))[0] == "10"

    world.team.api_rate_limit = 20
    world.team.save()
    team_plan_forget(team=world.team)
    assert headers(api.get("/project", key=key))[0] == "20"

    world.team.api_rate_limit = 0
    world.team.save()
    team_plan_forget(team=world.team)
    responses = [api.get("/project", key=key) for _ in range(30)]
    assert {response.status_code for response in responses} == {200}
    assert headers(responses[-1]) == (None, None, None)


def test_a_limit_of_zero_turns_the_limiter_off(api, world, clock, settings):
    settings.API_RATE_LIMIT = 0

    response = api.get("/project", key=world.keys["project"])

    assert response.status_code == 200
    assert headers(response) == (None, None, None)


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_never_pass_the_limit(world, clock, settings, monkeypatch):
    settings.API_RATE_LIMIT = 25
    # The frozen clock keeps every request in one second however long the fifty take in
    # real time, while Redis expires the second's counter in real time: on a loaded
    # machine it went before the last request and let more through.
    monkeypatch.setattr(ratelimit, "WINDOW_KEY_MILLISECONDS", 120_000)
    key = world.keys["project"]

    def hit(index: int) -> list[int]:
        api = Api()
        return [api.get("/project", key=key).status_code for _ in range(5)]

    statuses = [status for batch in run_in_threads(10, hit) for status in batch]

    assert statuses.count(200) == 25
    assert statuses.count(429) == 25


def test_the_limiter_loads_its_script_again_after_redis_forgot_it(api, world, clock, limit):
    key = world.keys["project"]
    assert api.get("/project", key=key).status_code == 200
    redis_client().script_flush()

    responses = [api.get("/project", key=key) for _ in range(3)]

    assert [r.status_code for r in responses] == [200, 200, 429]


def record(world) -> KeyRecord:
    return api_key_record_get(secret=world.keys["project"])


def test_a_busy_key_spends_leased_room_without_asking_redis_each_time(world, clock, settings):
    settings.API_RATE_LIMIT = 1000
    key = record(world)
    second = int(clock().timestamp())

    decisions = [rate_limit_hit(key) for _ in range(1001)]

    assert all(d.allowed for d in decisions[:1000])
    assert not decisions[1000].allowed
    assert [d.remaining for d in decisions[:3]] == [999, 998, 997]
    # Room is taken ten requests at a time: a hundred round trips for a thousand requests.
    assert int(redis_client().get(f"rl:{key.id}:{second}")) == 1000


def test_leases_of_many_processes_never_pass_the_limit(world, clock, settings):
    settings.API_RATE_LIMIT = 1000
    key = record(world)
    allowed = 0
    for _ in range(1500):
        # Each request as if served by a process that holds no lease of its own.
        _leases.clear()
        allowed += rate_limit_hit(key).allowed

    assert allowed == 100
    assert int(redis_client().get(f"rl:{key.id}:{int(clock().timestamp())}")) == 1000


def test_the_mcp_endpoint_is_limited_per_key_too(api, world, clock, settings):
    settings.API_RATE_LIMIT = 2
    key = world.keys["personal_owner"]

    answers = [api.get("/mcp", key=key) for _ in range(3)]

    assert [a.status_code for a in answers] == [405, 405, 429]
    assert headers(answers[0]) == ("2", "1", "1")
    assert answers[2].json()["error"]["code"] == "rate_limited"
    assert answers[2].headers["Retry-After"] == "1"
    assert headers(answers[2]) == ("2", "0", "1")
    assert api.get("/mcp", key="sr_user_unknown").status_code == 401


def test_threads_that_come_and_go_never_use_up_the_shared_redis_pool(world, clock, settings):
    # Under 200/s every request asks Redis (no leased room), on its thread's connection.
    settings.API_RATE_LIMIT = 150
    key = record(world)
    client = redis_client()
    assert client is not None
    cap = client.connection_pool.max_connections

    for _ in range(cap + 20):
        thread = threading.Thread(target=rate_limit_hit, args=(key,))
        thread.start()
        thread.join()

    # The pool the usage meters share still hands out connections.
    assert client.ping()
