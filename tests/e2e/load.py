"""What the topology test drives its load with: the API through every web server at once
(each request to the next server; one that does not answer, killed or starting again, is
retried on another, as a load balancer or a client would), and a ledger of the events
sent. Every request sent so repeats harmlessly: it carries an idempotency key, or it is a
read, or repeating it is answered with a conflict the caller expects."""

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.e2e.client import Api

# How long a request may keep failing over (a server killed and started again meanwhile).
FAILOVER_SECONDS = 60


class Spread:
    """The JSON API of a topology through all its web servers, with one key."""

    def __init__(self, base_urls: list[str], key: str, *, project_id: str | None = None) -> None:
        self.apis = [Api(url, key, project_id=project_id) for url in base_urls]
        self.turn = itertools.count()
        self.lock = threading.Lock()
        # Requests a server did not answer, retried on another.
        self.failovers = 0

    def call(self, method: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        first = next(self.turn)
        deadline = time.monotonic() + FAILOVER_SECONDS
        for attempt in itertools.count():
            api = self.apis[(first + attempt) % len(self.apis)]
            try:
                return api.call(method, path, body, **kw)
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                with self.lock:
                    self.failovers += 1
                time.sleep(0.05)
        raise AssertionError("unreachable")

    def ok(
        self, method: str, path: str, body: Any = None, *, status: int | tuple[int, ...] = 200
    ) -> Any:
        """The `data` of an answer whose status is `status` (or one of them)."""
        response = self.call(method, path, body)
        wanted = status if isinstance(status, tuple) else (status,)
        assert response.status_code in wanted, (
            f"{method} {path}: {response.status_code} {response.text[:2000]}"
        )
        return response.json()["data"]

    def get(self, path: str, **params: Any) -> Any:
        response = self.call("GET", path, params=params)
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
        return response.json()["data"]

    def post(self, path: str, body: Any = None, *, status: int | tuple[int, ...] = 200) -> Any:
        return self.ok("POST", path, {} if body is None else body, status=status)

    def every(self, path: str, **params: Any) -> list[Any]:
        """Every item of a cursor list, page by page."""
        found: list[Any] = []
        after = None
        while True:
            query = {**params, "limit": 100, **({"after": after} if after else {})}
            response = self.call("GET", path, params=query)
            assert response.status_code == 200, f"GET {path}: {response.text[:2000]}"
            page = response.json()
            found += page["data"]
            after = page["metadata"]["next"]
            if after is None:
                return found

    def close(self) -> None:
        for api in self.apis:
            api.http.close()


@dataclass
class Ledger:
    """Every event sent (by idempotency key): its name, contact and what the answers said."""

    names: dict[str, str] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)
    # The event ids the answers gave for a key: one each, however often it was sent.
    ids: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    received_at: dict[str, str] = field(default_factory=dict)
    resends: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, key: str, name: str, email: str, event_id: str) -> None:
        with self.lock:
            self.names[key] = name
            self.emails[key] = email
            self.ids[key].add(event_id)

    def send(self, spread: Spread, name: str, email: str, key: str, **payload: Any) -> Any:
        """One event through `POST /events`: accepted (202), or a duplicate (200) when it
        was sent before, by this test or by a request a killed server had committed."""
        body = {"event": name, "email": email, "idempotency_key": key, "payload": payload}
        answer = spread.post("/events", body, status=(200, 202))
        self.note(key, name, email, str(answer["id"]))
        with self.lock:
            self.received_at.setdefault(key, answer["received_at"])
            self.resends += bool(answer["duplicate"])
        return answer

    def send_batch(self, spread: Spread, items: list[tuple[str, str, str]]) -> None:
        """(name, email, key) items through `POST /events/batch`, none refused."""
        body = {
            "events": [
                {"event": name, "email": email, "idempotency_key": key, "payload": {"n": n}}
                for n, (name, email, key) in enumerate(items)
            ]
        }
        answer = spread.post("/events/batch", body, status=202)
        for (name, email, key), result in zip(items, answer["results"], strict=True):
            assert result["status"] in ("accepted", "duplicate"), result
            self.note(key, name, email, str(result["id"]))
        with self.lock:
            self.resends += answer["duplicates"]

    def keys_of(self, name: str) -> list[str]:
        return [key for key, named in self.names.items() if named == name]

    def pending(self, spread: Spread, keys: list[str]) -> list[str]:
        """The keys whose event is not `processed` yet, read by resending each."""
        left = []
        for key in keys:
            body = {"event": self.names[key], "email": self.emails[key], "idempotency_key": key}
            answer = spread.post("/events", body, status=200)
            assert answer["duplicate"] is True, answer
            assert {str(answer["id"])} == self.ids[key], (key, answer, self.ids[key])
            # `failed` is due again; `dead_lettered` would be an event lost.
            assert answer["status"] in ("accepted", "processing", "failed", "processed"), answer
            if answer["status"] != "processed":
                left.append(key)
        return left


class Worker(threading.Thread):
    """A thread of the load whose failure the test reports (not one that dies unseen)."""

    def __init__(self, name: str, target: Callable[[], Any]) -> None:
        super().__init__(name=name, daemon=True)
        self.work = target
        self.result: Any = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.work()
        except BaseException as error:
            self.failure = error

    def outcome(self, seconds: float) -> Any:
        self.join(timeout=seconds)
        assert not self.is_alive(), f"the load's {self.name} thread did not end in {seconds}s"
        if self.failure is not None:
            raise AssertionError(f"the load's {self.name} thread failed") from self.failure
        return self.result
