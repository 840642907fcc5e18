"""The fcm transport (being built; see pushproviders.transports.base for the interface)."""

from pushproviders.readiness import FcmCredentials
from pushproviders.transports.base import PushPayload, PushTarget


class FcmTransport:
    def __init__(self, credentials: FcmCredentials) -> None:
        self.credentials = credentials

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass
