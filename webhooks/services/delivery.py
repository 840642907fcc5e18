"""Sending deliveries on the work-queue kit: claim a batch (that commits), POST each signed
body with no transaction open through the guarded HTTP client (the URL checked and its
address pinned at connect time, no redirects followed, WEBHOOK_TIMEOUT_SECONDS per
connect, write and read), then record the outcomes (webhooks/services/outcomes.py).

A batch's requests go out together, a few threads at a time (WEBHOOK_SEND_CONCURRENCY):
a receiver that makes us wait out its timeout holds one thread, not the deliveries of
every other endpoint behind it, and a batch of slow receivers still ends within a few
timeouts, well inside the task's time limit and the claim's lease (webhooks/conf.py).
A batch's outcomes are recorded while the next batch's requests are under way, so the
PostgreSQL round trips of one overlap the HTTP of the other.

The HTTP client (its keep-alive connections and the addresses it checked per host) and the
threads serve every batch of one task's drain: opening a connection per thread per batch,
and starting the threads again, cost more than the sending itself (bench_webhooks.py). The
endpoints' secrets are read again each batch, so a rotation signs from the next batch."""

import functools
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
    """The client and threads of a drain's batches, and the endpoints' decrypted secrets
    of the batch under way."""

    def __init__(self) -> None:
        self.client = GuardedClient(
            allow_loopback_http=conf.allow_http(), timeout=conf.http_timeout()
        )
        self.secrets: dict[Any, list[str]] = {}
        self.concurrency = conf.send_concurrency()
        self._pool: ThreadPoolExecutor | None = None
        # The last batch sent, recorded while the next one's requests are under way.
        self.unrecorded: _Sent | None = None

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="webhooks"
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            # When the task's time limit interrupts a batch, the requests under way finish
            # on their own; the kit hands the batch's rows back.
            self._pool.shutdown(wait=False, cancel_futures=True)
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


@dataclass(frozen=True)
class _Sent:
    """A batch whose requests are done and whose outcomes are not recorded yet."""

    token: uuid.UUID
    claimed: list[WebhookDelivery]
    attempts: dict[Any, Attempt]
    lost: set[Any]


def _record(sent: _Sent) -> None:
    """The outcomes of a batch's attempts, through the kit (one transaction each way)."""
    attempts = sent.attempts
    delivered = [
        item for item in sent.claimed if item.pk in attempts and attempts[item.pk].error is None
    ]
    done = {item.pk for item in delivered}
    failed = [item for item in sent.claimed if item.pk not in done]
    if delivered:
        WEBHOOK_QUEUE.complete(token=sent.token, items=delivered, work=Delivered(attempts))
    if failed:
        WEBHOOK_QUEUE.run(token=sent.token, items=failed, work=Failures(attempts))
    if sent.lost:
        deliveries_lost_finish(ids=list(sent.lost))


def _record_unrecorded(sender: _Sender) -> None:
    """Records the batch sent last, if not yet; kept until that succeeds, so the end of the
    drain tries again after a time limit that interrupted it (the kit's updates match the
    claim's token and status: recording twice changes nothing)."""
    if sender.unrecorded is not None:
        _record(sender.unrecorded)
        sender.unrecorded = None


def _send_all(sender: _Sender, items: list[WebhookDelivery]) -> dict[Any, Attempt]:
    """Every item's attempt, at most WEBHOOK_SEND_CONCURRENCY at a time; the previous
    batch's outcomes are recorded meanwhile, while this one's requests are under way."""
    if len(items) == 1 or sender.concurrency == 1:
        _record_unrecorded(sender)
        return {item.pk: sender.attempt(item) for item in items}
    pool = sender.pool()
    futures = [(item.pk, pool.submit(sender.attempt, item)) for item in items]
    _record_unrecorded(sender)
    return {pk: future.result() for pk, future in futures}


def webhook_deliver_batch(*, sender: _Sender | None = None) -> int:
    """Claims a batch and sends it with no transaction open; returns how many deliveries
    it claimed. Its outcomes are recorded before it returns, or, with `sender` (a drain's
    client and threads), while the next batch's requests are under way, and at the latest
    when the drain ends (`webhook_deliver_due`): the claim's lease covers both."""
    if sender is None:
        own = _Sender()
        try:
            count = webhook_deliver_batch(sender=own)
            _record_unrecorded(own)
            return count
        finally:
            own.close()
    token, claimed = WEBHOOK_QUEUE.claim()
    if not claimed:
        _record_unrecorded(sender)
        return 0
    max_attempts = conf.retry_policy().max_attempts
    # Rows whose workers kept dying (the kit fails them without a send).
    lost = {item.pk for item in claimed if item.attempts > 1 and item.attempts > max_attempts}
    attempts: dict[Any, Attempt] = {}
    sender.secrets.clear()
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
    else:
        _record_unrecorded(sender)
    sender.unrecorded = _Sent(token, claimed, attempts, lost)
    return len(claimed)


def webhook_deliver_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Delivers due deliveries until none are left or the budget is spent, every batch
    through one client and one set of threads."""
    sender = _Sender()
    try:
        batch = functools.partial(webhook_deliver_batch, sender=sender)
        return WEBHOOK_QUEUE.drain(batch, budget_seconds=budget_seconds)
    finally:
        try:
            # The last batch (the time limit's included: its requests were made).
            _record_unrecorded(sender)
        finally:
            sender.close()
