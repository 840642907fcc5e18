"""A real SMTP server on loopback (aiosmtpd in a thread) for delivery tests, and the
settings that point Django's SMTP backend at it."""

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Received:
    envelope_from: str
    envelope_to: list[str]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        return message_from_bytes(self.raw, policy=policy.default)  # type: ignore[return-value]


@dataclass
class SmtpHandler:
    """Accepts every message, unless `replies` holds answers to give DATA first
    (`"451 4.3.0 Try later"`), one per message, in order."""

    received: list[Received] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    refused_recipients: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # With `hold_after` set, DATA of the message after that many holds until `release`
    # is set and is then refused (the sender is gone by then); `holding` says it began.
    hold_after: int | None = None
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    # How long DATA of each message takes before its answer: a sender killed meanwhile has
    # handed the message over but never learns it was accepted.
    delay_seconds: float = 0.0

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.refused_recipients:
            return self.refused_recipients[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.delay_seconds:
            await asyncio.sleep(self.delay_seconds)
        if self.hold_after is not None and len(self.received) >= self.hold_after:
            self.holding.set()
            while not self.release.is_set():
                await asyncio.sleep(0.02)
            return "451 4.3.0 Sender went away"
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
            self.received.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content))
            )
        return "250 Message accepted"


class SmtpServer:
    def __init__(self, *, delay_seconds: float = 0.0) -> None:
        self.handler = SmtpHandler(delay_seconds=delay_seconds)
        self.port = free_port()
        self.running = False
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    @property
    def received(self) -> list[Received]:
        return self.handler.received

    def start(self) -> "SmtpServer":
        self.controller.start()
        self.running = True
        return self

    def stop(self) -> None:
        if self.running:
            self.running = False
            self.controller.stop()

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"


def point_settings_at(settings: Any, server: SmtpServer) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    settings.EMAIL_HOST_USER = ""
    settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 5


def smtp_server_for(settings: Any) -> Iterator[SmtpServer]:
    """An SMTP server that Django's email backend sends to for this test (the body of a
    test module's `smtp` fixture)."""
    server = SmtpServer().start()
    point_settings_at(settings, server)
    try:
        yield server
    finally:
        server.stop()


def use_capture(settings: Any) -> None:
    """The local capture backend, as `make run` and deployments without EMAIL_URL use."""
    settings.EMAIL_BACKEND = "messaging.backends.CaptureBackend"
