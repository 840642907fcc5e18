"""Push delivery on the work-queue kit: claim a batch of deliveries (that commits), group
them by provider, open one transport per provider for the batch and send with no
transaction open, then record the outcomes in short transactions:

- accepted: `sent` with the provider's message id and `sendrealm.push.send`;
- the provider no longer knows the device: `invalid_token`, the installation deactivated
  and `sendrealm.push.failure`;
- a permanent error, a disabled or unready provider, a removed or inactive installation,
  or the last attempt: `failed` with the reason and `sendrealm.push.failure` (a provider
  problem leaves the installation active);
- a transient error: retried with backoff (at least the provider's `Retry-After`).

A message rolls up once every one of its deliveries is final: all sent `sent`, some
`partially_sent`, none `failed`."""

import contextvars
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction

from config.runtime import clock
from config.workqueue.errors import WorkError
from config.workqueue.models import WorkStatus
from config.workqueue.work import BatchWork
from messaging.selectors.campaigns import campaigns_canceled_among
from messaging.services.campaign_progress import campaigns_finish
from pushproviders import conf
from pushproviders.models import (
    PushDelivery,
    PushDeliveryState,
    PushInstallation,
    PushMessage,
    PushMessageStatus,
    PushProvider,
)
from pushproviders.queue import PUSH_QUEUE
from pushproviders.readiness import Credentials, provider_send_problem, provider_send_state
from pushproviders.services.outcomes import (
    Failed,
    Outcomes,
    Recorder,
    Sent,
    delivery_error,
    push_delivery_fail,
    push_messages_roll_up,
)
from pushproviders.transports import (
    PushPayload,
    PushTarget,
    PushTransport,
    transport_open,
)

logger = logging.getLogger(__name__)

# After this many transient failures in a row, the rest of a provider's group is not
# tried in this batch (each would wait out the same outage); they retry with backoff.
TRANSIENT_STREAK_LIMIT = 3
# The installation fields a batch reads (`_target`, the grouping, `active`).
INSTALLATION_FIELDS = ("app_id", "platform", "active", "token", "web_p256dh", "web_auth")
# Failures that say the connection itself failed: a kept transport is not reused after one.
CONNECTION_ERRORS = frozenset({"provider_timeout", "provider_unreachable"})


# --- sending --------------------------------------------------------------------------------


def _payload(delivery: PushDelivery) -> PushPayload:
    return PushPayload(title=delivery.title, body=delivery.body, data=dict(delivery.data or {}))


def _target(installation: PushInstallation) -> PushTarget:
    return PushTarget(
        token=installation.token, p256dh=installation.web_p256dh, auth=installation.web_auth
    )


def _open(
    provider: PushProvider | None, platform: str, transports: "_Transports | None" = None
) -> PushTransport | WorkError:
    problem = provider_send_problem(provider, platform=platform)
    if problem is not None:
        return WorkError(problem.message, code=problem.code, permanent=True)
    assert provider is not None
    credentials = provider_send_state(provider).credentials
    if credentials is None:
        return WorkError(
            f"The app's {platform} provider is not ready.",
            code="provider_not_ready",
            permanent=True,
        )
    if transports is not None:
        kept = transports.get(provider.pk, credentials)
        if kept is not None:
            return kept
    try:
        transport = transport_open(credentials)
    except WorkError as error:
        return error
    except SoftTimeLimitExceeded:
        raise
    except Exception as error:
        logger.warning("Opening the %s transport failed", platform, exc_info=True)
        return WorkError(f"{type(error).__name__}: {error}", code="transport_error")
    if transports is not None:
        transports.keep(provider.pk, credentials, transport)
    return transport


def _close(transport: PushTransport) -> None:
    try:
        transport.close()
    except Exception:
        logger.debug("Closing the %s transport failed", transport, exc_info=True)


class _Transports:
    """The transports of one drain, one per provider, each kept open from batch to batch
    while its credentials stay the same: one connection (for APNs one HTTP/2 connection,
    its TLS handshake made once) per provider for the whole drain rather than per batch."""

    def __init__(self) -> None:
        self.open: dict[Any, tuple[Credentials, PushTransport]] = {}

    def get(self, provider_id: Any, credentials: Credentials) -> PushTransport | None:
        kept = self.open.get(provider_id)
        if kept is None:
            return None
        if kept[0] == credentials:
            return kept[1]
        # The provider's credentials changed: its old connection goes.
        self.drop(provider_id)
        return None

    def keep(self, provider_id: Any, credentials: Credentials, transport: PushTransport) -> None:
        self.open[provider_id] = (credentials, transport)

    def forget(self, provider_id: Any) -> None:
        """No longer keeps the provider's transport (the caller closes it)."""
        self.open.pop(provider_id, None)

    def drop(self, provider_id: Any) -> None:
        kept = self.open.pop(provider_id, None)
        if kept is not None:
            _close(kept[1])

    def close(self) -> None:
        for provider_id in list(self.open):
            self.drop(provider_id)


# Set while `push_deliver_due` drains: the batches share its transports.
_drain_transports: contextvars.ContextVar[_Transports | None] = contextvars.ContextVar(
    "push_drain_transports", default=None
)


def _send_group(
    *,
    provider: PushProvider | None,
    platform: str,
    group: list[tuple[PushDelivery, PushInstallation]],
    results: dict[Any, Sent | Failed],
    recorder: Recorder,
) -> None:
    """Sends one provider's share of the batch over one transport: the drain's for the
    provider when one drains, else one opened for the batch and closed after it."""
    transports = _drain_transports.get()
    transport = _open(provider, platform, transports)
    if isinstance(transport, WorkError):
        at = clock.now()
        for item, _ in group:
            results[item.pk] = Failed(transport, at)
        return
    streak = 0
    deferred: WorkError | None = None
    try:
        for item, installation in group:
            at = clock.now()
            if deferred is not None:
                results[item.pk] = Failed(deferred, at)
                continue
            try:
                provider_message_id = transport.send(_target(installation), _payload(item))
            except SoftTimeLimitExceeded:
                # The task's time is up: the kit hands the batch's rows back (drain).
                raise
            except Exception as raised:
                error = raised if isinstance(raised, WorkError) else None
                if error is None:
                    logger.warning("Sending push delivery %s failed", item.pk, exc_info=True)
                    error = WorkError(f"{type(raised).__name__}: {raised}", code="send_error")
                results[item.pk] = Failed(error, at)
                if error.code in CONNECTION_ERRORS and transports is not None:
                    # The next batch reconnects rather than reuse what failed.
                    # It is closed when this group ends, like a batch's own.
                    assert provider is not None
                    transports.forget(provider.pk)
                    transports = None
                if error.permanent:
                    streak = 0
                    continue
                streak += 1
                if error.retry_after is not None or streak >= TRANSIENT_STREAK_LIMIT:
                    deferred = WorkError(
                        f"Not attempted, the provider kept failing: {delivery_error(error)}",
                        code=error.code,
                    )
                    deferred.retry_after = error.retry_after
                continue
            streak = 0
            results[item.pk] = Sent(provider_message_id=provider_message_id, at=at)
            recorder.add(item)
    finally:
        if transports is None:
            _close(transport)


def _finish_lost(items: list[PushDelivery]) -> None:
    """Deliveries the kit dead-lettered because workers kept dying on them: final too."""
    with transaction.atomic():
        for item in items:
            if PushDelivery.objects.filter(pk=item.pk, status=WorkStatus.DEAD_LETTERED).exists():
                push_delivery_fail(
                    delivery=item,
                    reason="Workers kept stopping while sending this notification.",
                    state=PushDeliveryState.FAILED,
                )


CAMPAIGN_CANCELED = "Not sent: the campaign was canceled before this notification left the queue."


class _NotSent(BatchWork[PushDelivery]):
    """Deliveries that must not go out (their campaign was canceled): `failed` with the
    reason, their jobs done."""

    def run(self, item: PushDelivery) -> None:
        push_delivery_fail(delivery=item, reason=CAMPAIGN_CANCELED, state=PushDeliveryState.FAILED)


def push_deliver_batch() -> int:
    """Claims a batch (that commits), sends it with one transport per provider and no
    transaction open, records the outcomes, and returns how many deliveries it claimed."""
    token, claimed = PUSH_QUEUE.claim()
    if not claimed:
        return 0
    # One look per batch at the campaigns of its messages: no notification of a canceled
    # campaign starts after the cancel is seen.
    campaign_ids = {item.message.campaign_id for item in claimed} - {None}
    canceled = campaigns_canceled_among(campaign_ids=campaign_ids)
    items = [item for item in claimed if item.message.campaign_id not in canceled]
    if len(items) < len(claimed):
        dropped = [item for item in claimed if item.message.campaign_id in canceled]
        PUSH_QUEUE.run(token=token, items=dropped, work=_NotSent())
        push_messages_roll_up(
            messages=[(item.message_id, item.message_created_at) for item in dropped]
        )
    max_attempts = conf.retry_policy().max_attempts
    # Only what sending reads: the rest (timestamps, the contact) would be parsed per row.
    installations = PushInstallation.objects.only(*INSTALLATION_FIELDS).in_bulk(
        {item.installation_id for item in items}
    )
    providers = {
        (provider.app_id, provider.platform): provider
        for provider in PushProvider.objects.filter(
            app_id__in={installation.app_id for installation in installations.values()}
        )
    }
    results: dict[Any, Sent | Failed] = {}
    lost: list[PushDelivery] = []
    groups: dict[tuple[Any, str], list[tuple[PushDelivery, PushInstallation]]] = defaultdict(list)
    now = clock.now()
    for item in items:
        installation = installations.get(item.installation_id)
        if item.attempts > max_attempts:
            lost.append(item)
        elif installation is None:
            results[item.pk] = Failed(
                WorkError(
                    "The installation was removed.", code="installation_removed", permanent=True
                ),
                now,
            )
        elif not installation.active:
            results[item.pk] = Failed(
                WorkError(
                    "The installation is no longer active.",
                    code="installation_inactive",
                    permanent=True,
                ),
                now,
            )
        else:
            groups[(installation.app_id, installation.platform)].append((item, installation))
    recorder = Recorder(token, results)
    for (app_id, platform), group in groups.items():
        _send_group(
            provider=providers.get((app_id, platform)),
            platform=platform,
            group=group,
            results=results,
            recorder=recorder,
        )
    recorder.flush()
    failed = [item for item in items if isinstance(results.get(item.pk), Failed)] + lost
    if failed:
        # In installation order: concurrent workers deactivating the same installations
        # lock their rows in one order.
        failed.sort(key=lambda item: str(item.installation_id))
        PUSH_QUEUE.run(token=token, items=failed, work=Outcomes(results))
        if lost:
            _finish_lost(lost)
    recorder.roll_up((item.message_id, item.message_created_at) for item in failed)
    if campaign_ids:
        campaigns_finish(campaign_ids=campaign_ids)
    return len(claimed)


def push_deliver_due(*, budget_seconds: float) -> tuple[int, bool]:
    """Delivers due push deliveries until none are left or the budget is spent, each
    provider's transport kept open across the batches."""
    transports = _Transports()
    reset = _drain_transports.set(transports)
    try:
        return PUSH_QUEUE.drain(push_deliver_batch, budget_seconds=budget_seconds)
    finally:
        _drain_transports.reset(reset)
        transports.close()


def push_deliveries_requeue(*, ids: Iterable[Any]) -> int:
    """Gives dead-lettered deliveries (failed or invalid_token) a fresh set of attempts,
    due now, and puts their messages back to `queued` until they roll up again."""
    with transaction.atomic():
        dead = list(
            PushDelivery.objects.select_for_update()
            .filter(pk__in=list(ids), status=WorkStatus.DEAD_LETTERED)
            .values_list("pk", "message_id", "message_created_at")
        )
        if not dead:
            return 0
        count = PUSH_QUEUE.requeue(ids=[pk for pk, _, _ in dead])
        # Their messages' times too: the update looks in those partitions alone.
        PushDelivery.objects.filter(
            pk__in=[pk for pk, _, _ in dead], message_created_at__in={at for _, _, at in dead}
        ).update(state=PushDeliveryState.QUEUED, error=None)
        PushMessage.objects.filter(pk__in={message_id for _, message_id, _ in dead}).exclude(
            status=PushMessageStatus.QUEUED
        ).update(status=PushMessageStatus.QUEUED, sent_at=None)
    return count
