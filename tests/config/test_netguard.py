"""The URL guard: https only, and every address the host resolves to must be public."""

from collections.abc import Iterator

import pytest

from config.net import netguard
from config.net.netguard import UrlRefused, url_checked

NAMES = {
    "push.example.net": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "half.example.net": ["93.184.216.34", "192.168.1.10"],
    "inside.example.net": ["10.20.30.40"],
    "mapped.example.net": ["::ffff:127.0.0.1"],
    "nat64.example.net": ["64:ff9b::a00:1"],
    "sixtofour.example.net": ["2002:a9fe:a9fe::1"],
    "public-nat64.example.net": ["64:ff9b::5db8:d822"],
}


def resolve(host: str, port: int) -> list[str]:
    if host in NAMES:
        return NAMES[host]
    return netguard.system_resolve(host, port)


@pytest.fixture(autouse=True)
def _names() -> Iterator[None]:
    netguard.set_resolver(resolve)
    yield
    netguard.set_resolver(None)


def test_an_https_url_of_a_public_host_passes_with_its_addresses():
    checked = url_checked("https://push.example.net/send?x=1")

    assert checked.host == "push.example.net"
    assert checked.port == 443
    assert checked.addresses == tuple(NAMES["push.example.net"])


def test_a_literal_public_address_passes():
    assert url_checked("https://8.8.8.8:8443/").port == 8443


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/token",
        "https://127.0.0.1/token",
        "https://[::1]/token",
        "https://10.0.0.1/token",
        "https://172.16.5.4/",
        "https://192.168.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "https://[fe80::1]/",
        "https://100.64.0.1/",
        "https://0.0.0.0/",
        "https://224.0.0.1/",
        "https://inside.example.net/",
        "https://mapped.example.net/",
        "https://nat64.example.net/",
        "https://sixtofour.example.net/",
        "https://[64:ff9b::7f00:1]/",
        "https://[::7f00:1]/",
        "https://2130706433/",
        "https://0x7f.0.0.1/",
        "https://push.localhost/",
    ],
)
def test_a_host_that_is_not_public_is_refused(url):
    with pytest.raises(UrlRefused, match="not public"):
        url_checked(url)


def test_one_private_address_among_public_ones_is_enough_to_refuse():
    with pytest.raises(UrlRefused, match="not public"):
        url_checked("https://half.example.net/")


@pytest.mark.parametrize(
    "url", ["http://push.example.net/", "ftp://push.example.net/", "push.example.net"]
)
def test_only_https_is_accepted(url):
    with pytest.raises(UrlRefused, match="https"):
        url_checked(url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://user:pw@push.example.net/", "user name"),
        ("https:///path", "host"),
        ("https://push.example.net:99999/", "valid URL"),
        ("https://nowhere.invalid/", "does not resolve"),
    ],
)
def test_malformed_or_unresolvable_urls_are_refused(url, reason):
    with pytest.raises(UrlRefused, match=reason):
        url_checked(url)


def test_allowing_loopback_http_lets_local_stand_ins_through():
    assert url_checked("http://127.0.0.1:9000/token", allow_loopback_http=True).port == 9000
    assert url_checked("http://localhost/token", allow_loopback_http=True).scheme == "http"
    assert url_checked("https://[::1]/", allow_loopback_http=True).host == "::1"


def test_allowing_loopback_http_still_refuses_private_addresses():
    with pytest.raises(UrlRefused, match="not public"):
        url_checked("http://10.0.0.1/", allow_loopback_http=True)
    with pytest.raises(UrlRefused, match="not public"):
        url_checked("http://169.254.169.254/", allow_loopback_http=True)


def test_an_ipv6_address_embedding_a_public_ipv4_one_passes():
    assert url_checked("https://public-nat64.example.net/").addresses == ("64:ff9b::5db8:d822",)


@pytest.mark.parametrize(
    "url", ["https://push.example.net/", "https://nowhere.invalid/", "https://8.8.8.8/"]
)
def test_a_well_formed_url_is_checked_without_resolving(url):
    def unavailable(host: str, port: int) -> list[str]:
        raise AssertionError(f"{host} was resolved")

    netguard.set_resolver(unavailable)

    assert netguard.url_well_formed(url).url == url


@pytest.mark.parametrize(
    "url",
    ["https://10.0.0.1/", "https://[::ffff:10.0.0.1]/", "https://localhost/", "https://0177.1/"],
)
def test_a_url_whose_text_names_a_non_public_host_is_not_well_formed(url):
    with pytest.raises(UrlRefused, match="not public"):
        netguard.url_well_formed(url)


def test_loopback_literals_are_well_formed_when_loopback_http_is_allowed():
    for url in ("http://127.0.0.1:9000/", "http://[::1]/", "http://localhost:8000/"):
        assert netguard.url_well_formed(url, allow_loopback_http=True).scheme == "http"
    with pytest.raises(UrlRefused, match="not public"):
        netguard.url_well_formed("http://10.0.0.1/", allow_loopback_http=True)
