"""The apns transport (being built; see pushproviders.transports.base for the interface)."""

from pushproviders.readiness import ApnsCredentials
from pushproviders.transports.base import PushPayload, PushTarget


class ApnsTransport:
    def __init__(self, credentials: ApnsCredentials) -> None:
        self.credentials = credentials

    def send(self, target: PushTarget, payload: PushPayload) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass
