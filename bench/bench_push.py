"""Push delivery: notifications rendered from a template for contacts with an Android and an
iOS device each, handed by two worker processes to loopback stand-ins of FCM (with Google's
token endpoint) and APNs (HTTP/2), each in a process of its own, per second; beside raw
httpx posting the same prebuilt requests to the same stand-ins over one connection per
provider, in the same run."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import jwt

from bench import keys
from bench.harness import PYTHON, ROOT, Context, log
from bench.push_standins import StandinProcess

MESSAGES = int(os.environ.get("BENCH_PUSH_MESSAGES", "2000"))
# Each message goes to one contact's two devices: one FCM, one APNs delivery.
DELIVERIES = MESSAGES * 2
WORKERS = 2
WORKER_BUDGET_SECONDS = 120.0
APNS_KEY_ID = "ABC123DEFG"
APNS_TEAM_ID = "TEAM123456"
BUNDLE_ID = "com.example.bench"
TITLE = "Order {{ data.order }} shipped"
BODY = "Hello {{ contact.fields.first_name | default: 'there' }}, it is on its way."

SEED_CODE = """
import json, time
from tenancy.models import Project
from messaging.services.templates import template_create, template_publish
from pushproviders.services.push_apps import push_app_create
from pushproviders.services.providers import push_provider_create
from pushproviders.services.installations import push_installation_register
from pushproviders.services.sending import push_send
project = Project.objects.get(pk="{project_id}")
app = push_app_create(project=project, name="bench")
push_provider_create(project=project, app_ref=app.id,
    body={{"platform": "fcm", "service_account": {account}}})
push_provider_create(project=project, app_ref=app.id, body={{"platform": "apns",
    "apns_key_id": "{key_id}", "apns_team_id": "{team_id}", "apns_private_key": {p8},
    "apns_bundle_id": "{bundle_id}"}})
template = template_create(project=project, name="bench", channel="push",
    content={{"title": {title}, "body": {body}, "data": {{"order": "{{{{ data.order }}}}"}}}})
template_publish(project=project, template_id=template.id)
started = time.monotonic()
for n in range({count}):
    email = f"user{{n}}@example.net"
    android, _ = push_installation_register(project=project, app_ref=app.id, platform="fcm",
        token=f"fcm-bench-token-{{n:08d}}:APA91b", email=email)
    push_installation_register(project=project, app_ref=app.id, platform="apns",
        token=f"{{n:064x}}", email=email)
    push_send(project=project, app_ref=app.id, contact_id=android.contact_id,
        template_id=template.id, data={{"order": n}})
print(json.dumps({{"seconds": time.monotonic() - started}}))
"""

WORKER_CODE = """
import json, time
from pushproviders.services.delivery import push_deliver_due
started = time.monotonic()
claimed, more = push_deliver_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "seconds": time.monotonic() - started}}))
"""


def start_standins() -> tuple[StandinProcess, StandinProcess]:
    """The FCM and APNs stand-ins, each in its own process."""
    fcm = StandinProcess("fcm", account=keys.service_account())
    try:
        apns = StandinProcess(
            "apns",
            private_key_pem=keys.apns_p8(),
            key_id=APNS_KEY_ID,
            team_id=APNS_TEAM_ID,
            bundle_id=BUNDLE_ID,
        )
    except Exception:
        fcm.stop()
        raise
    return fcm, apns


def stop_standins(fcm: StandinProcess, apns: StandinProcess) -> None:
    fcm.stop()
    apns.stop()


def take_arrivals(fcm: StandinProcess, apns: StandinProcess) -> list[float]:
    """The notifications both stand-ins accepted since the last take, in time order."""
    return sorted(fcm.take() + apns.take())


def _fcm_access_token(fcm: StandinProcess) -> str:
    account = fcm.account
    now = int(time.time())
    assertion = jwt.encode(
        {
            "iss": account["client_email"],
            "scope": "https://www.googleapis.com/auth/firebase.messaging",
            "aud": fcm.token_uri,
            "iat": now,
            "exp": now + 3600,
        },
        account["private_key"],
        algorithm="RS256",
        headers={"kid": account["private_key_id"]},
    )
    response = httpx.post(
        fcm.token_uri,
        data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion},
    )
    response.raise_for_status()
    return str(response.json()["access_token"])


def prebuilt_requests(count: int) -> tuple[list[bytes], list[tuple[str, bytes]]]:
    """What the workers send, built once (FCM bodies; APNs paths and bodies): the baseline
    only transmits."""
    fcm, apns = [], []
    for n in range(count):
        title, body = f"Order {n} shipped", "Hello there, it is on its way."
        fcm.append(
            json.dumps(
                {
                    "message": {
                        "token": f"fcm-bench-token-{n:08d}:APA91b",
                        "notification": {"title": title, "body": body},
                        "data": {"order": str(n)},
                        "android": {"priority": "HIGH"},
                    }
                },
                separators=(",", ":"),
            ).encode()
        )
        apns.append(
            (
                f"/3/device/{n:064x}",
                json.dumps(
                    {"order": str(n), "aps": {"alert": {"title": title, "body": body}}},
                    separators=(",", ":"),
                ).encode(),
            )
        )
    return fcm, apns


def baseline_rate(
    fcm: StandinProcess, apns: StandinProcess, requests: tuple[list[bytes], list[tuple[str, bytes]]]
) -> tuple[float, list[float]]:
    """httpx over one connection per stand-in, one request at a time: notifications per
    second and each request's seconds."""
    fcm_bodies, apns_requests = requests
    fcm_url = f"{fcm.url}/v1/projects/{fcm.account['project_id']}/messages:send"
    fcm_headers = {
        "authorization": f"Bearer {_fcm_access_token(fcm)}",
        "content-type": "application/json",
    }
    provider_token = jwt.encode(
        {"iss": APNS_TEAM_ID, "iat": int(time.time())},
        keys.apns_p8(),
        algorithm="ES256",
        headers={"kid": APNS_KEY_ID},
    )
    apns_headers = {
        "authorization": f"bearer {provider_token}",
        "apns-topic": BUNDLE_ID,
        "apns-push-type": "alert",
        "apns-priority": "10",
        "content-type": "application/json",
    }
    latencies: list[float] = []
    started = time.monotonic()
    with httpx.Client() as client:
        for body in fcm_bodies:
            sent = time.monotonic()
            client.post(fcm_url, content=body, headers=fcm_headers).raise_for_status()
            latencies.append(time.monotonic() - sent)
    with httpx.Client(http1=False, http2=True) as client:
        for path, body in apns_requests:
            sent = time.monotonic()
            headers = {**apns_headers, "apns-id": str(uuid.uuid4())}
            client.post(f"{apns.url}{path}", content=body, headers=headers).raise_for_status()
            latencies.append(time.monotonic() - sent)
    seconds = time.monotonic() - started
    return len(latencies) / seconds, latencies


def _percentile_ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys_ = ctx.keys()
    server = ctx.server()
    fcm, apns = start_standins()
    try:
        env = {
            **server.env,
            "PUSH_ALLOW_HTTP": "true",
            "PUSH_FCM_BASE_URL": fcm.url,
            "PUSH_APNS_BASE_URL": apns.url,
        }
        account = keys.service_account(token_uri=fcm.token_uri)
        seed = subprocess.run(
            [
                PYTHON,
                "manage.py",
                "shell",
                "-c",
                SEED_CODE.format(
                    project_id=keys_["project_id"],
                    account=repr(account),
                    key_id=APNS_KEY_ID,
                    team_id=APNS_TEAM_ID,
                    p8=repr(keys.apns_p8()),
                    bundle_id=BUNDLE_ID,
                    title=repr(TITLE),
                    body=repr(BODY),
                    count=MESSAGES,
                ),
            ],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        log(f"seeded {MESSAGES} push messages: {json.loads(seed.strip().splitlines()[-1])}")
        workers = [
            subprocess.Popen(
                [
                    PYTHON,
                    "manage.py",
                    "shell",
                    "-c",
                    WORKER_CODE.format(seconds=WORKER_BUDGET_SECONDS),
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(WORKERS)
        ]
        for worker in workers:
            out, _ = worker.communicate(timeout=WORKER_BUDGET_SECONDS + 60)
            log(f"worker: {out.strip().splitlines()[-1] if out.strip() else '(no output)'}")
        delivered = take_arrivals(fcm, apns)
        problems = fcm.problems + apns.problems
        if problems:
            log(f"the stand-ins refused: {problems[:3]}")
        if len(delivered) < DELIVERIES:
            log(f"only {len(delivered)} of {DELIVERIES} notifications arrived")
        span = delivered[-1] - delivered[0] if len(delivered) > 1 else 0.0
        rate = (len(delivered) - 1) / span if span else 0.0
        # The time between consecutive arrivals at one worker (two send in parallel).
        gaps = [(b - a) * WORKERS for a, b in itertools.pairwise(delivered)]
        baseline, _ = baseline_rate(fcm, apns, prebuilt_requests(MESSAGES))
        take_arrivals(fcm, apns)
    finally:
        stop_standins(fcm, apns)
    yield {
        "name": f"push_delivery_w{WORKERS}",
        "ops_per_s": round(rate, 1),
        "p50_ms": _percentile_ms(gaps, 0.50),
        "p95_ms": _percentile_ms(gaps, 0.95),
        "p99_ms": _percentile_ms(gaps, 0.99),
        "baseline_ops_per_s": round(baseline, 1),
        "ratio": round(rate / baseline, 4) if baseline else None,
        "unit": "notifications/s",
        "concurrency": WORKERS,
        "errors": DELIVERIES - len(delivered),
    }
