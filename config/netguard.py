"""The check every URL the service fetches on a user's behalf passes first (push
subscription endpoints, OAuth token URIs, later webhooks): https only, and every address
the host resolves to is global, so a user cannot point the service at its own network
(loopback, private, link-local, metadata services).

Knows no app: callers say whether plain http to loopback is allowed (a setting such as
PUSH_ALLOW_HTTP, for tests against local stand-ins). A fetcher connects to one of the
checked addresses it is given, so a second DNS answer cannot swap in another host.
"""

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


class UrlRefused(ValueError):
    """A URL the service will not fetch; the message says why, without resolving details
    of the service's own network."""


class UrlUnresolved(UrlRefused):
    """The host has no address right now: unlike the other refusals, this may pass later."""


@dataclass(frozen=True)
class CheckedUrl:
    """A URL that passed the check, with the addresses its host resolved to."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


def system_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (IPv4 and IPv6), as text."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


# Tests replace this to give names addresses without a DNS server.
_resolver: Resolver = system_resolve


def set_resolver(resolver: Resolver | None) -> None:
    """Replaces the resolver (None restores the system's)."""
    global _resolver
    _resolver = resolver or system_resolve


def _address(text: str) -> IpAddress:
    # A scope id (`fe80::1%eth0`) is not part of the address.
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def address_is_public(address: IpAddress) -> bool:
    """Global unicast: not private, loopback, link-local, shared, reserved or multicast."""
    return address.is_global and not address.is_multicast


def url_checked(url: str, *, allow_loopback_http: bool = False) -> CheckedUrl:
    """`url` when it is https and its host resolves only to public addresses; UrlRefused
    otherwise. With `allow_loopback_http`, http is accepted too, and so are loopback
    addresses (never private or link-local ones)."""
    if not isinstance(url, str) or not url:
        raise UrlRefused("Must be a URL.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UrlRefused("Must be a valid URL.") from None
    scheme = parts.scheme.lower()
    allowed_schemes = ("https", "http") if allow_loopback_http else ("https",)
    if scheme not in allowed_schemes:
        raise UrlRefused("Must be an https URL.")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("Must not carry a user name or password.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UrlRefused("Must name a host.")
    port = port or (443 if scheme == "https" else 80)
    try:
        resolved = _resolver(host, port)
    except (OSError, UnicodeError, ValueError):
        raise UrlUnresolved("The host does not resolve.") from None
    if not resolved:
        raise UrlUnresolved("The host does not resolve.")
    for text in resolved:
        address = _address(text)
        if address_is_public(address):
            continue
        if allow_loopback_http and address.is_loopback:
            continue
        raise UrlRefused("The host resolves to an address that is not public.")
    return CheckedUrl(url=url, scheme=scheme, host=host, port=port, addresses=tuple(resolved))
