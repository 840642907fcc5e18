"""An HTTP client for URLs fetched on a user's behalf: every URL passes config.net.netguard
before a request, and every connection goes to an address that check approved, so a
second DNS answer (rebinding) cannot send the request into the service's own network.

Knows no app: the caller says whether loopback http is allowed (PUSH_ALLOW_HTTP for push,
WEBHOOKS_ALLOW_HTTP for webhooks).
TLS still verifies the certificate against the URL's host name; only the TCP connect uses
the pinned address. Proxies from the environment are ignored (they would connect for us).
"""

import functools
import re
import ssl
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple

import hpack
import httpcore
import httpx
import orjson

from config import libinternals
from config.net import netguard


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process: loading the CA bundle costs about 20 ms,
    and a client is made per provider per batch. A context is safe to share between
    connections and threads once configured."""
    return httpx.create_ssl_context(trust_env=False)


class _PinnedBackend(httpcore.SyncBackend):
    """Opens TCP connections only to the addresses pinned for a (host, port)."""

    def __init__(self) -> None:
        self._pins: dict[tuple[str, int], tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def pin(self, host: str, port: int, addresses: tuple[str, ...]) -> None:
        with self._lock:
            self._pins[(host, port)] = addresses

    def pinned(self, host: str, port: int) -> bool:
        with self._lock:
            return (host, port) in self._pins

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        with self._lock:
            addresses = self._pins.get((host, port), ())
        if not addresses:
            # Only reachable if a request skipped GuardedClient.checked: refuse, never
            # resolve here.
            raise httpcore.ConnectError("The host was not checked before connecting.")
        failure: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(
                    address.split("%", 1)[0],
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure


class _ProviderEncoder(hpack.Encoder):
    """HPACK for a connection to one provider API: literals go without Huffman coding (in
    Python it costs more CPU per request than the bytes it saves on such a connection), and
    the headers named in `unindexed` (values that never repeat, such as a path with a device
    token) are kept out of the dynamic table, which then keeps what does repeat (topic,
    priority, content type) as one-byte references instead of evicting it."""

    unindexed: frozenset[bytes] = frozenset()

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        # (name, value, True) is hpack's never-indexed literal, without a HeaderTuple.
        return super().encode(
            [
                (header[0], header[1], True) if header[0] in self.unindexed else header
                for header in headers
            ],
            huffman=False,
        )


class GuardedClient:
    """One reused httpx.Client whose connections go only to checked addresses.

    Call `checked(url)` before each request (it raises netguard.UrlRefused, or its
    UrlUnresolved subclass when the name does not resolve right now); a (host, port) is
    checked once per client, so a batch pays one resolution per host.
    """

    def __init__(
        self,
        *,
        allow_loopback_http: bool,
        timeout: float,
        http1: bool = True,
        http2: bool = False,
        unindexed: Iterable[bytes] = (),
    ) -> None:
        self.allow_loopback_http = allow_loopback_http
        # What the HPACK encoders of this client's HTTP/2 connections keep out of their
        # tables (see `_ProviderEncoder`); None without HTTP/2.
        self._unindexed = frozenset(unindexed) if http2 else None
        self._backend = _PinnedBackend()
        context = _ssl_context()
        # httpx does not take a network backend: its transport goes through a pool with
        # the same settings and the pinning backend.
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            http1=http1,
            http2=http2,
            network_backend=self._backend,
        )
        transport = libinternals.transport_over(
            self._pool, verify=context, http1=http1, http2=http2, trust_env=False
        )
        self.http = httpx.Client(
            transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
        )
        self._timeout = httpx.Timeout(timeout).as_dict()

    def checked(self, url: str) -> str:
        """`url` once its host passed the guard (resolving at most once per client)."""
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError):
            raise netguard.UrlRefused("Must be a valid URL.") from None
        # httpx connects with the host as it puts it on the wire (lower case, IDNA).
        host = parsed.raw_host.decode("ascii")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        if parsed.scheme not in ("https", "http"):
            raise netguard.UrlRefused("Must be an https URL.")
        if not self._backend.pinned(host, port) or (
            parsed.scheme == "http" and not self.allow_loopback_http
        ):
            checked = netguard.url_checked(url, allow_loopback_http=self.allow_loopback_http)
            self._backend.pin(host, port, checked.addresses)
        return url

    def checked_url(self, url: str) -> httpx.URL:
        """`checked(url)`, parsed: with `at` and `post`, a sender that posts to one host
        many times parses and checks its URL once rather than twice per request."""
        return httpx.URL(self.checked(url))

    @staticmethod
    def at(base: httpx.URL, path: str) -> "Target":
        """`base` (from `checked_url`) with `path` in place of its path and query: the same
        checked host, for `post`, without making a URL (httpx parses one in about 40 µs).
        `path` is made of unreserved characters only, so it needs no quoting and cannot
        name another host."""
        if not _PLAIN_PATH.fullmatch(path):
            raise ValueError("The path must be plain: a / then /, letters, digits, -._~")
        return Target(base, path.encode("ascii"))

    def post(
        self, url: "httpx.URL | Target", *, headers: list[tuple[bytes, bytes]], content: bytes
    ) -> "Answer":
        """POSTs `content` to `url` (from `checked_url` or `at`) straight into the pinned
        connection pool, read in full: the client's timeout and no redirects, as with
        `http.post`, without the client's per-request layers (cookies, auth, event hooks,
        redirect handling, default headers) and without httpx's request and response
        models, which a provider API call does not use. Adds Host and Content-Length.
        Raises httpx errors as `http.post` does."""
        base, target = (url.base, url.path) if isinstance(url, Target) else (url, url.raw_path)
        request = httpcore.Request(
            b"POST",
            httpcore.URL(scheme=base.raw_scheme, host=base.raw_host, port=base.port, target=target),
            headers=[
                (b"host", base.netloc),
                *headers,
                (b"content-length", str(len(content)).encode()),
            ],
            content=content,
            extensions={"timeout": self._timeout},
        )
        with libinternals.httpx_errors():
            response = self._pool.handle_request(request)
            try:
                body = response.read()
            finally:
                response.close()
        if self._unindexed is not None:
            self._tune_encoders(self._unindexed)
        return Answer(response.status, response.headers, body)

    def _tune_encoders(self, unindexed: frozenset[bytes]) -> None:
        """Gives the HPACK encoder of each new HTTP/2 connection the provider policy, from
        its second request on (see `libinternals.encoders_retype`)."""

        def configure(encoder: _ProviderEncoder) -> None:
            encoder.unindexed = unindexed

        libinternals.encoders_retype(self._pool, _ProviderEncoder, configure)

    def close(self) -> None:
        self.http.close()


_PLAIN_PATH = re.compile(r"/[A-Za-z0-9/._~-]*")


class Target(NamedTuple):
    """Where `GuardedClient.post` sends: a checked URL (`base`, for its scheme, host and
    port) and the path and query to ask for there (`path`, as sent)."""

    base: httpx.URL
    path: bytes


class Answer:
    """A response to `GuardedClient.post`, read in full: the status, the header lines as
    received, the body."""

    __slots__ = ("content", "raw_headers", "status_code")

    def __init__(self, status_code: int, raw_headers: list[tuple[bytes, bytes]], content: bytes):
        self.status_code = status_code
        self.raw_headers = raw_headers
        if any(name.lower() == b"content-encoding" for name, _ in raw_headers):
            # Not asked for (no Accept-Encoding is sent), but decoded as httpx would.
            content = httpx.Response(status_code, headers=raw_headers, content=content).read()
        self.content = content

    def header(self, name: str) -> str | None:
        """The first value of header `name` (lower case), or None."""
        wanted = name.encode()
        for key, value in self.raw_headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return None

    def json(self) -> Any:
        """The body parsed as JSON; raises ValueError when it is not."""
        return orjson.loads(self.content)
