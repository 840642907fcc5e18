"""Sending deliveries on the work-queue kit: claim a batch (that commits), POST each signed
body with no transaction open through the guarded HTTP client (the URL checked and its
address pinned at connect time, no redirects followed, WEBHOOK_TIMEOUT_SECONDS per
connect, write and read), then record the outcomes (webhooks/services/outcomes.py).

A batch's requests go out together, a few threads at a time (WEBHOOK_SEND_CONCURRENCY):
a receiver that makes us wait out its timeout holds one thread, not the deliveries of
every other endpoint behind it, and a batch of slow receivers still ends within a few
timeouts, well inside the task's time limit and the claim's lease."""

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from config.net import netguard
from config.net.guardedhttp import Answer, GuardedClient
from config.runtime import clock
from config.runtime.secrets import SecretUnreadable
from config.workqueue.errors import WorkError
from webhooks import conf
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.queue import WEBHOOK_QUEUE
from webhooks.services.endpoints import endpoint_signing_secrets
from webhooks.services.outcomes import Attempt, Delivered, Failures, deliveries_lost_finish
from webhooks.signing import signature_header

logger = logging.getLogger(__name__)

USER_AGENT = b"Sendrealm-Webhooks/1.0"


def _answer_error(answer: Answer) -> WorkError:
    """A non-2xx answer as a transient error: its status and the start of its body."""
    status = answer.status_code
    note = " (redirects are not followed)" if 300 <= status < 400 else ""
    text = answer.content[: conf.ERROR_BODY_CHARACTERS].decode("utf-8", "replace").strip()
    error = WorkError(f"HTTP {status}{note}" + (f": {text}" if text else ""), code=f"http_{status}")
    retry_after = answer.header("retry-after")
    if status in (429, 503) and retry_after is not None and retry_after.strip().isdigit():
        # Honoured up to the policy's longest wait.
        error.retry_after = min(float(retry_after), conf.retry_policy().cap_seconds)
    return error


class _Sender:
    """One batch's client and the endpoints' decrypted secrets."""

    def __init__(self) -> None:
        self.client = GuardedClient(
            allow_loopback_http=conf.allow_http(), timeout=conf.http_timeout()
        )
        self.secrets: dict[Any, list[str]] = {}

    def close(self) -> None:
        self.client.close()

    def prepare(self, item: WebhookDelivery) -> Attempt | None:
        """What makes an attempt pointless (a disabled endpoint, an unreadable secret), or
        None once the endpoint's secrets are at hand; in the calling thread."""
        endpoint: WebhookEndpoint = item.endpoint
        at = clock.now()
        if endpoint.deleted_at is not None:
            error = WorkError("The endpoint was deleted.", code="endpoint_deleted", permanent=True)
            return Attempt(at, None, error, counted=False)
        if endpoint.disabled_at is not None:
            error = WorkError("The endpoint is disabled.", code="endpoint_disabled", permanent=True)
            return Attempt(at, None, error, counted=False)
        try:
            if endpoint.pk not in self.secrets:
                self.secrets[endpoint.pk] = endpoint_signing_secrets(endpoint, at=at)
        except SecretUnreadable:
            error = WorkError(
                "The endpoint's secret cannot be read.", code="secret_unreadable", permanent=True
            )
            return Attempt(at, None, error, counted=False)
        return None

    def attempt(self, item: WebhookDelivery) -> Attempt:
        """One signed POST of the delivery (after `prepare`): safe to call from several
        threads at once (the client's pool and pins are)."""
        endpoint: WebhookEndpoint = item.endpoint
        at = clock.now()
        body = item.body.encode()
        timestamp = int(at.timestamp())
        headers = [
            (b"content-type", b"application/json"),
            (b"user-agent", USER_AGENT),
            (b"webhook-id", item.webhook_id.encode()),
            (b"webhook-timestamp", str(timestamp).encode()),
            (
                b"webhook-signature",
                signature_header(
                    secrets_=self.secrets[endpoint.pk],
                    webhook_id=item.webhook_id,
                    timestamp=timestamp,
                    body=body,
                ).encode(),
            ),
        ]
        try:
            url = self.client.checked_url(endpoint.url)
            answer = self.client.post(url, headers=headers, content=body)
        except netguard.UrlUnresolved as unresolved:
            return Attempt(at, None, WorkError(str(unresolved), code="unresolved"))
        except netguard.UrlRefused as refused:
            # The URL (or what its name resolves to now) is not one we send to.
            error = WorkError(f"Refused: {refused}", code="url_refused", permanent=True)
            return Attempt(at, None, error)
        except httpx.TimeoutException:
            error = WorkError(f"No answer within {conf.http_timeout():g} s.", code="timeout")
            return Attempt(at, None, error)
        except httpx.HTTPError as failed:
            error = WorkError(f"Could not deliver: {type(failed).__name__}", code="unreachable")
            return Attempt(at, None, error)
        if 200 <= answer.status_code < 300:
            return Attempt(at, answer.status_code, None)
        return Attempt(at, answer.status_code, _answer_error(answer))


def _send_all(sender: _Sender, items: list[WebhookDelivery]) -> dict[Any, Attempt]:
    """Every item's attempt, at most WEBHOOK_SEND_CONCURRENCY at a time."""
    if len(items) == 1:
        return {items[0].pk: sender.attempt(items[0])}
    pool = ThreadPoolExecutor(
        max_workers=min(conf.send_concurrency(), len(items)), thread_name_prefix="webhooks"
    )
    try:
        return dict(zip((item.pk for item in items), pool.map(sender.attempt, items), strict=True))
    finally:
        # When the task's time limit interrupts the wait, the requests under way finish on
        # their own; the kit hands the batch's rows back.
        pool.shutdown(wait=False, cancel_futures=True)


def webhook_deliver_batch() -> int:
    """Claims a batch, sends it with no transaction open, records the outcomes; returns
    how many deliveries it claimed."""
    token, claimed = WEBHOOK_QUEUE.claim()
    if not claimed:
        return 0
    max_attempts = conf.retry_policy().max_attempts
    # Rows whose workers kept dying (the kit fails them without a send).
    lost = {item.pk for item in claimed if item.attempts > 1 and item.attempts > max_attempts}
    attempts: dict[Any, Attempt] = {}
    sender = _Sender()
    try:
        sending: list[WebhookDelivery] = []
        for item in claimed:
            if item.pk in lost:
                continue
            refused = sender.prepare(item)
            if refused is None:
                sending.append(item)
            else:
                attempts[item.pk] = refused
        if sending:
            attempts.update(_send_all(sender, sending))
    finally:
        sender.close()
    delivered = [
        item for item in claimed if item.pk in attempts and attempts[item.pk].error is None
    ]
    done = {item.pk for item in delivered}
    failed = [item for item in claimed if item.pk not in done]
    if delivered:
        WEBHOOK_QUEUE.complete(token=token, items=delivered, work=Delivered(attempts))
    if failed:
        WEBHOOK_QUEUE.run(token=token, items=failed, work=Failures(attempts))
    if lost:
        deliveries_lost_finish(ids=list(lost))
    return len(claimed)


def webhook_deliver_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Delivers due deliveries until none are left or the budget is spent."""
    return WEBHOOK_QUEUE.drain(webhook_deliver_batch, budget_seconds=budget_seconds)
