"""The check every URL the service fetches on a user's behalf passes first (push
subscription endpoints, OAuth token URIs, webhook endpoints): https only, and every address
the host resolves to is global, so a user cannot point the service at its own network
(loopback, private, link-local, metadata services).

Two steps: `url_well_formed` refuses what is wrong in the URL itself (scheme, user
information, no host, a host that spells a non-public address or names this machine) and
asks no DNS server, so it is what a URL is checked with when a user gives it; `url_checked`
adds the resolution, and is what a fetcher calls when it connects.

Knows no app: callers say whether plain http to loopback is allowed (a setting such as
PUSH_ALLOW_HTTP, for tests against local stand-ins). A fetcher connects to one of the
checked addresses it is given, so a second DNS answer cannot swap in another host.
"""

import ipaddress
import re
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


# IPv6 ranges whose last 32 bits are an IPv4 address a packet may end up at: IPv4-compatible
# (deprecated), SIIT's translated form and NAT64's well-known prefix. (Mapped addresses are
# read as IPv4 by `_address`; 6to4 embeds its address elsewhere, see `_embedded_ipv4`.)
_EMBEDDING_NETWORKS = tuple(
    ipaddress.IPv6Network(network) for network in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in network for network in _EMBEDDING_NETWORKS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_is_public(address: IpAddress) -> bool:
    """Global unicast: not private, loopback, link-local, shared, reserved or multicast,
    and, for an IPv6 address that embeds an IPv4 one, neither is that."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return address_is_public(embedded)
    return True


def _allowed(address: IpAddress, *, allow_loopback: bool) -> bool:
    return address_is_public(address) or (allow_loopback and address.is_loopback)


# Hosts that only digits, dots and hex prefixes make up: resolvers read them as IPv4
# addresses in the old inet_aton forms (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`).
_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+")


def _literal_address(host: str) -> IpAddress | None:
    """The address a host spells, when it is one rather than a name."""
    try:
        return _address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _names_this_machine(host: str) -> bool:
    # `localhost` and its subdomains are loopback by definition (RFC 6761), whatever DNS says.
    return host == "localhost" or host.endswith(".localhost")


@dataclass(frozen=True)
class WellFormedUrl:
    """A URL whose own text passed the check: its scheme, host (lower case) and port."""

    url: str
    scheme: str
    host: str
    port: int


def url_well_formed(url: str, *, allow_loopback_http: bool = False) -> WellFormedUrl:
    """`url` when nothing in its text rules it out: https (or http with
    `allow_loopback_http`), no user information, a host, and a host that is not a
    non-public address literal (mapped and embedded forms included) nor `localhost`.
    Asks no DNS server: a name is checked when it is resolved, by `url_checked`."""
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
    literal = _literal_address(host)
    if literal is not None:
        if not _allowed(literal, allow_loopback=allow_loopback_http):
            raise UrlRefused("The host is an address that is not public.")
    elif _names_this_machine(host) and not allow_loopback_http:
        raise UrlRefused("The host names this machine, which is not public.")
    return WellFormedUrl(url=url, scheme=scheme, host=host, port=port)


def url_checked(url: str, *, allow_loopback_http: bool = False) -> CheckedUrl:
    """`url` when it is well formed (`url_well_formed`) and its host resolves only to
    public addresses; UrlRefused otherwise. With `allow_loopback_http`, http is accepted
    too, and so are loopback addresses (never private or link-local ones)."""
    well_formed = url_well_formed(url, allow_loopback_http=allow_loopback_http)
    scheme, host, port = well_formed.scheme, well_formed.host, well_formed.port
    try:
        resolved = _resolver(host, port)
    except (OSError, UnicodeError, ValueError):
        raise UrlUnresolved("The host does not resolve.") from None
    if not resolved:
        raise UrlUnresolved("The host does not resolve.")
    for text in resolved:
        if not _allowed(_address(text), allow_loopback=allow_loopback_http):
            raise UrlRefused("The host resolves to an address that is not public.")
    return CheckedUrl(url=url, scheme=scheme, host=host, port=port, addresses=tuple(resolved))
