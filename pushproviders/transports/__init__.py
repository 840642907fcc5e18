"""Push protocol clients: FCM HTTP v1, APNs over HTTP/2, Web Push with VAPID.

`transport_open` picks the client by the credentials' type. One transport is one reused
connection for a whole batch; close it when the batch is done.
"""

from pushproviders.readiness import (
    ApnsCredentials,
    Credentials,
    FcmCredentials,
    WebPushCredentials,
)
from pushproviders.transports.apns import ApnsTransport
from pushproviders.transports.base import PushPayload, PushSendError, PushTarget, PushTransport
from pushproviders.transports.fcm import FcmTransport
from pushproviders.transports.webpush import WebPushTransport

__all__ = [
    "PushPayload",
    "PushSendError",
    "PushTarget",
    "PushTransport",
    "transport_open",
]


def transport_open(credentials: Credentials) -> PushTransport:
    """A transport for the provider whose decrypted credentials these are."""
    if isinstance(credentials, FcmCredentials):
        return FcmTransport(credentials)
    if isinstance(credentials, ApnsCredentials):
        return ApnsTransport(credentials)
    if isinstance(credentials, WebPushCredentials):
        return WebPushTransport(credentials)
    raise TypeError(f"No push transport for {type(credentials).__name__}.")
