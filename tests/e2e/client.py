"""What the end-to-end tests use to talk to the product: its HTTP API with a key, the staff
console with a login and its CSRF token, and polling with a deadline."""

import re
import time
import uuid
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

# How long anything the workers do may take to show (a run, an email, a fan-out).
DEADLINE_SECONDS = 30


def until(check: Callable[[], T | None], what: str, *, seconds: float = DEADLINE_SECONDS) -> T:
    """Polls `check` until it returns something truthy (returned), or fails naming `what`
    and the last value seen."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f}s: {what} (last seen: {last!r})")
        time.sleep(0.2)


def until_value(
    fetch: Callable[[], T],
    done: Callable[[T], bool],
    what: str,
    *,
    seconds: float = DEADLINE_SECONDS,
) -> T:
    """Polls `fetch` until `done` holds for what it returned (returned)."""
    box: list[T] = []

    def check() -> bool:
        box[:] = [fetch()]
        return done(box[0])

    try:
        until(check, what, seconds=seconds)
    except AssertionError as error:
        raise AssertionError(f"{error}; last fetched: {box[0] if box else None!r}") from None
    return box[0]


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


class Api:
    """The JSON API of one running topology with one key."""

    def __init__(self, base_url: str, key: str, *, project_id: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        if project_id is not None:
            headers["X-Service-Project-Id"] = project_id
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=20)

    def call(self, method: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        if body is not None:
            kw["json"] = body
        return self.http.request(method, path, **kw)

    def ok(self, method: str, path: str, body: Any = None, *, status: int = 200, **kw: Any) -> Any:
        """The `data` of an answer that must have `status`."""
        response = self.call(method, path, body, **kw)
        assert response.status_code == status, (
            f"{method} {path}: {response.status_code} {response.text[:2000]}"
        )
        return response.json()["data"]

    def get(self, path: str, **params: Any) -> Any:
        return self.ok("GET", path, params=params)

    def post(self, path: str, body: Any = None, *, status: int = 200) -> Any:
        return self.ok("POST", path, {} if body is None else body, status=status)

    # --- the resources several tests make -----------------------------------------------

    def contact(self, email: str, **fields: Any) -> str:
        response = self.call("POST", "/contacts/upsert", {"email": email, "fields": fields})
        assert response.status_code in (200, 201), response.text[:2000]
        return str(response.json()["data"]["id"])

    def email_template(self, *, subject: str, text: str) -> str:
        """A published email template; its id."""
        template = self.post(
            "/templates",
            {
                "name": unique("template-"),
                "channel": "email",
                "from": "Shop <shop@example.com>",
                "subject": subject,
                "html": f"<p>{text}</p>",
                "text": text,
            },
            status=201,
        )
        self.post(f"/templates/{template['id']}/actions/publish")
        return str(template["id"])

    def automation(self, definition: dict[str, Any], *, publish: bool = True) -> str:
        created = self.post(
            "/automations", {"name": unique("flow-"), "definition": definition}, status=201
        )
        if publish:
            self.post(f"/automations/{created['id']}/actions/publish")
        return str(created["id"])

    def event(self, name: str, email: str, *, key: str | None = None, **payload: Any) -> str:
        """Sends one event; its idempotency key (resending it reads the event's status)."""
        key = key or unique("e2e-")
        body = {"event": name, "email": email, "idempotency_key": key, "payload": payload}
        data = self.post("/events", body, status=202)
        assert data["status"] == "accepted", data
        return key

    def event_status(self, name: str, email: str, key: str) -> str:
        """The stored event's status, read by resending its idempotency key."""
        body = {"event": name, "email": email, "idempotency_key": key}
        data = self.post("/events", body)
        assert data["duplicate"] is True, data
        return str(data["status"])

    def runs(self, automation_id: str) -> list[dict[str, Any]]:
        return list(self.get(f"/automations/{automation_id}/runs", limit=100))


class Console:
    """The staff console (/admin/) over HTTP as a browser uses it: the login form, the
    session and CSRF cookies, and the CSRF token of each form. Behind a TLS proxy (as
    production runs) both cookies are Secure and requests say https the way the proxy
    would (X-Forwarded-Proto); the cookies are kept here rather than in a jar that would
    hold Secure cookies back from an http URL."""

    def __init__(self, base_url: str, *, behind_tls_proxy: bool) -> None:
        scheme = "https" if behind_tls_proxy else "http"
        origin = f"{scheme}://{base_url.split('://', 1)[1]}"
        headers = {"Origin": origin, "Referer": f"{origin}/"}
        if behind_tls_proxy:
            headers["X-Forwarded-Proto"] = "https"
        self.http = httpx.Client(base_url=base_url, timeout=20, headers=headers)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        self.http.cookies.clear()
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        response = self.http.request(method, path, headers={"Cookie": cookie}, **kw)
        for header in response.headers.get_list("set-cookie"):
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response

    @staticmethod
    def csrf_token(page: httpx.Response) -> str:
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert found is not None, f"no CSRF token on {page.url}: {page.text[:500]}"
        return found[1]

    def log_in(self, username: str, password: str) -> None:
        page = self.request("GET", "/admin/login/")
        assert page.status_code == 200, page.text[:500]
        form = {
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": self.csrf_token(page),
            "next": "/admin/",
        }
        answer = self.request("POST", "/admin/login/?next=/admin/", data=form)
        assert answer.status_code == 302, f"login: {answer.status_code} {answer.text[:1000]}"
        assert self.request("GET", "/admin/").status_code == 200

    def action(self, changelist: str, action: str, ids: list[str]) -> httpx.Response:
        """Runs a changelist action on the selected rows, with the list page's token."""
        page = self.request("GET", changelist)
        assert page.status_code == 200, page.text[:500]
        form = {
            "csrfmiddlewaretoken": self.csrf_token(page),
            "action": action,
            "_selected_action": ids,
            "index": "0",
        }
        return self.request("POST", changelist, data=form)


def mail_to(smtp: Any, address: str) -> list[Any]:
    """The messages the loopback SMTP server accepted for `address`."""
    return [received for received in smtp.received if address in received.envelope_to]


def settle(check: Callable[[], Any], *, seconds: float) -> None:
    """Polls `check` for up to `seconds`, until it holds; the caller asserts afterwards."""
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.2)
