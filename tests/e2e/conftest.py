"""The end-to-end suite's fixtures: the loopback SMTP server and push stand-ins the product
reaches, and the topologies (`make run`'s, production's, and production's through
PgBouncer), each the selected tests use started once per session as separate OS
processes, all at once, and stopped at the end. The tests talk to them over HTTP, SMTP
and the stand-ins only.

Every test runs on each topology of DEFAULT_TOPOLOGIES (`topology` is parametrized); a
test that applies to others says so with `@pytest.mark.parametrize("topology", [...],
indirect=True)`, as the ones through PgBouncer do (`production_pgbouncer`, which skips
where Debian's pgbouncer is not installed)."""

import threading
from collections.abc import Iterator

import pytest

from bench import keys
from bench.standins import ApnsStandin, FcmStandin, WebPushStandin
from tests.e2e.client import Api
from tests.e2e.flows import publish_flows
from tests.e2e.logs import report
from tests.e2e.stack import MakeRunStack, PgBouncerStack, ProductionStack, Stack
from tests.messaging.smtp_server import SmtpServer
from tests.pushproviders.sending import APNS_BUNDLE_ID, APNS_KEY_ID, APNS_TEAM_ID

TOPOLOGIES: dict[str, type[Stack]] = {
    "make_run": MakeRunStack,
    "production": ProductionStack,
    "production_pgbouncer": PgBouncerStack,
}
# Where a test runs unless it names its topologies: production through PgBouncer only
# for the tests that name it.
DEFAULT_TOPOLOGIES = ["make_run", "production"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "topology" in metafunc.fixturenames and not any(
        "topology" in marker.args[0] for marker in metafunc.definition.iter_markers("parametrize")
    ):
        metafunc.parametrize("topology", DEFAULT_TOPOLOGIES, indirect=True, scope="session")


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    """The product runs in processes of its own: the test process's cache is not its."""


@pytest.fixture(scope="session")
def smtp() -> Iterator[SmtpServer]:
    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fcm() -> Iterator[FcmStandin]:
    with FcmStandin(account=keys.service_account()) as server:
        yield server


@pytest.fixture(scope="session")
def apns() -> Iterator[ApnsStandin]:
    with ApnsStandin(
        private_key_pem=keys.apns_p8(),
        key_id=APNS_KEY_ID,
        team_id=APNS_TEAM_ID,
        bundle_id=APNS_BUNDLE_ID,
    ) as server:
        yield server


@pytest.fixture(scope="session")
def webpush() -> Iterator[WebPushStandin]:
    with WebPushStandin(vapid_public_key=keys.vapid_pair()[1]) as server:
        yield server


def outside_urls(smtp: SmtpServer, fcm: FcmStandin, apns: ApnsStandin) -> dict[str, str]:
    """What the product reaches outside itself: the SMTP server, the push stand-ins (Web
    Push endpoints are the subscriptions' own URLs) and loopback webhook receivers."""
    return {
        "EMAIL_URL": smtp.url,
        "PUSH_ALLOW_HTTP": "true",
        "PUSH_FCM_BASE_URL": fcm.url,
        "PUSH_APNS_BASE_URL": apns.url,
        # Webhook receivers are the tests' loopback servers (tests/e2e/test_webhooks.py),
        # which only WEBHOOKS_ALLOW_HTTP lets a delivery reach; a retry comes within a
        # second or two, and a killed worker's deliveries are taken over within seconds
        # (the lease outlasts a batch of the shortened timeouts).
        "WEBHOOKS_ALLOW_HTTP": "true",
        "WEBHOOK_RETRY_BASE_SECONDS": "1",
        "WEBHOOK_RETRY_CAP_SECONDS": "2",
        "WEBHOOK_TIMEOUT_SECONDS": "5",
        "WEBHOOK_LEASE_SECONDS": "12",
    }


def _topologies_wanted(session: pytest.Session) -> list[str]:
    wanted = []
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        name = callspec.params.get("topology") if callspec is not None else None
        if name is not None and name not in wanted and TOPOLOGIES[name].unavailable() is None:
            wanted.append(name)
    return wanted


@pytest.fixture(scope="session")
def stacks(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    smtp: SmtpServer,
    fcm: FcmStandin,
    apns: ApnsStandin,
    webpush: WebPushStandin,
) -> Iterator[dict[str, Stack]]:
    """Every topology the selected tests use, started at once in the background (their
    migrations overlap); each test waits only for its own."""
    outside = outside_urls(smtp, fcm, apns)
    started = {
        name: TOPOLOGIES[name](tmp_path_factory.mktemp(name), outside)
        for name in _topologies_wanted(request.session)
    }
    for stack in started.values():
        stack.start_in_background()
    yield started
    # Stopped side by side: each waits for its processes to finish what they hold.
    stoppers = [threading.Thread(target=stack.stop) for stack in started.values()]
    for stack, stopper in zip(started.values(), stoppers, strict=True):
        if stack.thread is not None:
            stack.thread.join(timeout=60)
        stopper.start()
    for stopper in stoppers:
        stopper.join()
    problems = [problem for stack in started.values() for problem in stack.tracebacks()]
    logs = ", ".join(str(stack.logdir) for stack in started.values())
    assert not problems, (
        f"processes logged {len(problems)} tracebacks (logs: {logs}):\n{report(problems)}"
    )


@pytest.fixture(scope="session")
def topology(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    unavailable = TOPOLOGIES[request.param].unavailable()
    if unavailable is not None:
        pytest.skip(unavailable)
    stack = stacks[request.param].ready()
    if "flows" not in stack.prepared:
        # Before any test sends an event to it.
        api = Api(stack.base_url, stack.key("project"))
        stack.prepared["flows"] = publish_flows(api)
        api.http.close()
    return stack


@pytest.fixture(autouse=True)
def _no_traceback_logged(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test, no process of its topology logged a traceback meanwhile (reported
    as an error of the test's teardown, apart from its own outcome)."""
    if "topology" not in request.fixturenames:
        yield
        return
    stack: Stack = request.getfixturevalue("topology")
    mark = stack.mark()
    yield
    problems = stack.tracebacks(since=mark)
    assert not problems, (
        f"{stack.name} processes logged {len(problems)} tracebacks during the test "
        f"(logs: {stack.logdir}):\n{report(problems)}"
    )


@pytest.fixture
def api(topology: Stack) -> Iterator[Api]:
    client = Api(topology.base_url, topology.key("project"))
    yield client
    client.http.close()


@pytest.fixture
def personal(topology: Stack) -> Iterator[Api]:
    """The demo owner's personal key, with the project header."""
    client = Api(topology.base_url, topology.key("personal"), project_id=topology.project_id)
    yield client
    client.http.close()
