import socket
from collections.abc import Iterator

import pytest

from config.net import netguard

# Public names the tests use, with documentation-range or well-known public addresses:
# no DNS server is asked.
PUBLIC_NAMES = {
    "oauth2.googleapis.com": ["142.250.74.42"],
    "updates.push.services.mozilla.com": ["34.107.221.82"],
    "fcm.googleapis.com": ["142.250.74.74", "2a00:1450:4001:82b::200a"],
    "sneaky.example.com": ["34.107.221.82", "10.1.2.3"],
    "intranet.example.com": ["10.0.0.7"],
    "loopback.example.com": ["127.0.0.1"],
    "v6loopback.example.com": ["::1"],
    "metadata.example.com": ["169.254.169.254"],
}


def fake_resolve(host: str, port: int) -> list[str]:
    if host in PUBLIC_NAMES:
        return PUBLIC_NAMES[host]
    if host.endswith(".example.com") or host.endswith(".com"):
        raise OSError("unknown name")
    # Literal addresses and `localhost`: the system resolves them without a server.
    return netguard.system_resolve(host, port)


@pytest.fixture(autouse=True)
def _names() -> Iterator[None]:
    netguard.set_resolver(fake_resolve)
    yield
    netguard.set_resolver(None)


# URLs refused for what they are, without DNS: each names its host by an address that is
# not public (literal, mapped, NAT64, the old numeric forms), or this machine.
NOT_PUBLIC_BY_THEMSELVES = [
    "https://127.0.0.1/x",
    "https://[::1]/x",
    "https://10.0.0.7/x",
    "https://192.168.1.1:8443/x",
    "https://169.254.169.254/latest/meta-data",
    "https://[fe80::1]/x",
    "https://0.0.0.0/x",
    "https://[::ffff:127.0.0.1]/x",
    "https://[::ffff:a00:7]/x",
    "https://[64:ff9b::a9fe:a9fe]/x",
    "https://2130706433/x",
    "https://0x7f.1/x",
    "https://localhost/x",
    "https://push.localhost/x",
]


@pytest.fixture
def dns_unavailable() -> Iterator[list[str]]:
    """Every lookup fails as getaddrinfo does without a reachable DNS server; the names
    asked are listed."""
    asked: list[str] = []

    def unavailable(host: str, port: int) -> list[str]:
        asked.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    netguard.set_resolver(unavailable)
    yield asked
    netguard.set_resolver(fake_resolve)


@pytest.fixture(autouse=True)
def _fresh_provider_tokens() -> Iterator[None]:
    # Access and provider tokens are cached per process; each test starts without any.
    from pushproviders.transports import apns, fcm

    fcm.access_tokens.clear()
    apns.provider_tokens.clear()
    yield
    fcm.access_tokens.clear()
    apns.provider_tokens.clear()
