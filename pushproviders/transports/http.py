"""What the push transports share: the guarded client and how HTTP failures map to
PushSendError. Messages name the failure, never a URL's path, a token or a key."""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import httpx

from config.net import netguard
from config.net.guardedhttp import GuardedClient
from pushproviders import conf
from pushproviders.transports.base import permanent, transient


def guarded_client(
    *, http1: bool = True, http2: bool = False, unindexed: Iterable[bytes] = ()
) -> GuardedClient:
    """A client for one batch: PUSH_HTTP_TIMEOUT, and loopback http when PUSH_ALLOW_HTTP;
    over HTTP/2, the `unindexed` headers are kept out of HPACK's table."""
    return GuardedClient(
        allow_loopback_http=conf.allow_http(),
        timeout=conf.http_timeout(),
        http1=http1,
        http2=http2,
        unindexed=unindexed,
    )


def url_guarded(client: GuardedClient, url: str, *, what: str) -> str:
    """`url` once the guard passed it; a refused URL fails the send before any request
    (permanent), a name that does not resolve right now is transient."""
    return str(url_guarded_parsed(client, url, what=what))


def url_guarded_parsed(client: GuardedClient, url: str, *, what: str) -> httpx.URL:
    """`url_guarded`, parsed for `GuardedClient.post` and `GuardedClient.at`."""
    try:
        return client.checked_url(url)
    except netguard.UrlUnresolved:
        raise transient(f"{what}_unresolved", f"The {what} host does not resolve.") from None
    except netguard.UrlRefused as refused:
        raise permanent(f"{what}_refused", f"The {what} is refused: {refused}") from None


@contextmanager
def provider_reached(provider: str) -> Iterator[None]:
    """Timeouts and connection failures while talking to `provider` are transient."""
    try:
        yield
    except httpx.TimeoutException:
        raise transient("provider_timeout", f"{provider} did not answer in time.") from None
    except httpx.HTTPError as error:
        raise transient(
            "provider_unreachable", f"{provider} could not be reached ({type(error).__name__})."
        ) from None
