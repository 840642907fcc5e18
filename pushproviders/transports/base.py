"""The interface every push transport offers: what to send, to whom, and how it failed.

A transport is one reused connection to one provider with one set of credentials; the
sending pipeline opens it for a batch, calls `send` per installation and closes it.
"""

from dataclasses import dataclass, field
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


class PushTransport(Protocol):
    def send(self, target: PushTarget, payload: PushPayload) -> str:
        """Hands one notification to the provider; the provider's message id.
        Raises PushSendError."""
        ...

    def close(self) -> None:
        """Closes the connection; the transport is not used afterwards."""
        ...
