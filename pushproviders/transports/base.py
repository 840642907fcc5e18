"""The interface every push transport offers: what to send, to whom, and how it failed.

A transport is one reused connection to one provider with one set of credentials; the
sending pipeline opens it for a batch, calls `send` per installation and closes it.
"""

import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Protocol

from config.workqueue.errors import WorkError


@dataclass(frozen=True)
class PushPayload:
    """One notification. `data` values are strings, as FCM requires of its data map."""

    title: str
    body: str
    data: dict[str, str] = field(default_factory=dict)
    # Notifications with the same key replace each other on the device (FCM collapse_key,
    # APNs apns-collapse-id, Web Push Topic).
    collapse_key: str | None = None
    # How long the provider keeps trying to deliver; None = the provider's default.
    ttl_seconds: int | None = None
    # "high" wakes the device now; "normal" lets the provider save its battery.
    priority: str = "high"


@dataclass(frozen=True, repr=False)
class PushTarget:
    """The device: an FCM registration token, an APNs device token (hex), or a Web Push
    subscription endpoint with its `p256dh` and `auth` keys."""

    token: str
    p256dh: str = ""
    auth: str = ""

    def __repr__(self) -> str:
        # Tokens address a person's device: keep them out of logs and tracebacks.
        return "PushTarget(token=…)"


class PushSendError(WorkError):
    """A send failed. Transient failures retry (honouring `retry_after` seconds when the
    provider gave one); permanent ones do not. `invalid_token` means the provider no
    longer knows the device: the installation must be deactivated (implies permanent)."""

    code = "push_send_failed"

    def __init__(
        self,
        message: str = "",
        *,
        code: str,
        permanent: bool,
        invalid_token: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code, permanent=permanent or invalid_token)
        self.invalid_token = invalid_token
        self.retry_after = retry_after


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from now, or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def transient(code: str, message: str, retry_after: str | None = None) -> PushSendError:
    return PushSendError(
        message, code=code, permanent=False, retry_after=retry_after_seconds(retry_after)
    )


def permanent(code: str, message: str) -> PushSendError:
    return PushSendError(message, code=code, permanent=True)


def invalid_token(code: str, message: str) -> PushSendError:
    return PushSendError(message, code=code, permanent=True, invalid_token=True)


class PushTransport(Protocol):
    def send(self, target: PushTarget, payload: PushPayload) -> str:
        """Hands one notification to the provider; the provider's message id.
        Raises PushSendError."""
        ...

    def close(self) -> None:
        """Closes the connection; the transport is not used afterwards."""
        ...
