"""The webpush transport (being built; see pushproviders.transports.base for the interface)."""

from pushproviders.readiness import WebPushCredentials
from pushproviders.transports.base import PushPayload, PushTarget


class WebPushTransport:
    def __init__(self, credentials: WebPushCredentials) -> None:
        self.credentials = credentials

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass
