"""`POST /domains/{id}/verify` against a real DNS server on loopback, and the DKIM key that
sending gets for a verified domain."""

import datetime as dt
import time
from email.message import EmailMessage

import dkim
import pytest

from messaging.models import Domain, DomainStatus
from messaging.services.domains import _resolver_address, domain_dkim_key_for, txt_lookup
from tests.messaging.dns_domains import DnsServer, dns_server_for, point_at_a_silent_port
from tests.messaging.factories_domains import DomainFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def dns(settings):
    with dns_server_for(settings) as server:
        yield server


@pytest.fixture
def created(api, world) -> dict:
    """A domain added through the API: its answer's `data`."""
    response = api.post("/domains", {"name": "example.com"}, key=world.keys["project"])
    assert response.status_code == 201
    return response.json()["data"]


def verify(api, world, domain: dict):
    return api.post(f"/domains/{domain['id']}/verify", key=world.keys["project"])


def statuses(data: dict) -> list[str]:
    return [record["status"] for record in data["records"]]


def test_a_domain_whose_records_are_all_published_is_verified(api, world, dns, created, clock):
    dns.publish(created["records"])

    response = verify(api, world, created)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "verified"
    assert statuses(data) == ["verified", "verified", "verified"]
    assert data["verified_at"] == "2026-01-01T12:00:00Z"
    assert sorted(dns.questions) == sorted(record["name"] for record in created["records"])
    stored = Domain.objects.get()
    assert stored.status == DomainStatus.VERIFIED
    assert stored.checked_at == clock()


def test_a_domain_without_its_dkim_record_fails_with_per_record_statuses(api, world, dns, created):
    spf, _, dmarc = created["records"]
    dns.publish([spf, dmarc])

    response = verify(api, world, created)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "failed"
    assert data["verified_at"] is None
    assert statuses(data) == ["verified", "failed", "verified"]


def test_a_domain_without_spf_fails(api, world, dns, created):
    dns.publish(created["records"][1:])

    data = verify(api, world, created).json()["data"]

    assert data["status"] == "failed"
    assert statuses(data) == ["failed", "verified", "verified"]


def test_a_missing_dmarc_record_fails_only_that_record(api, world, dns, created):
    dns.publish(created["records"][:2])

    data = verify(api, world, created).json()["data"]

    assert data["status"] == "verified"
    assert statuses(data) == ["verified", "verified", "failed"]


def test_an_existing_spf_record_that_also_includes_ours_matches(api, world, dns, created, settings):
    spf, dkim_record, _ = created["records"]
    dns.records[spf["name"]] = [
        "google-site-verification=abc",
        f"v=spf1 include:_spf.google.com +include:{settings.SENDING_SPF_INCLUDE} -all",
    ]
    dns.publish([dkim_record])

    data = verify(api, world, created).json()["data"]

    assert data["status"] == "verified"
    assert statuses(data)[:2] == ["verified", "verified"]


def test_two_spf_records_are_a_failure(api, world, dns, created):
    spf, dkim_record, _ = created["records"]
    dns.publish([spf, dkim_record])
    dns.records[spf["name"]].append("v=spf1 include:other.example ~all")

    data = verify(api, world, created).json()["data"]

    assert statuses(data)[0] == "failed"
    assert data["status"] == "failed"


def test_an_spf_record_without_our_include_is_a_failure(api, world, dns, created):
    spf, dkim_record, _ = created["records"]
    dns.records[spf["name"]] = ["v=spf1 include:_spf.google.com ~all"]
    dns.publish([dkim_record])

    assert statuses(verify(api, world, created).json()["data"])[0] == "failed"


def test_a_dkim_record_with_another_key_is_a_failure(api, world, dns, created):
    other = api.post("/domains", {"name": "other.example"}, key=world.keys["project"]).json()
    spf, dkim_record, _ = created["records"]
    dns.publish([spf])
    dns.records[dkim_record["name"]] = [other["data"]["records"][1]["value"]]

    data = verify(api, world, created).json()["data"]

    assert statuses(data)[1] == "failed"
    assert data["status"] == "failed"


def test_a_dkim_record_published_with_extra_spaces_still_matches(api, world, dns, created):
    spf, dkim_record, _ = created["records"]
    key = dkim_record["value"].split("p=", 1)[1]
    spaced = " ".join(key[i : i + 64] for i in range(0, len(key), 64))
    dns.publish([spf])
    dns.records[dkim_record["name"]] = [f"v=DKIM1;k=rsa;  p={spaced}"]

    assert verify(api, world, created).json()["data"]["status"] == "verified"


def test_with_the_dns_server_down_every_record_fails_and_the_answer_is_200(
    api, world, settings, created
):
    point_at_a_silent_port(settings)

    started = time.monotonic()
    response = verify(api, world, created)
    elapsed = time.monotonic() - started

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["status"] == "failed"
    assert statuses(data) == ["failed", "failed", "failed"]
    # The three lookups run at once, each bounded by DNS_TIMEOUT_SECONDS.
    assert elapsed < 5


def test_a_name_that_does_not_exist_fails_its_record(api, world, dns, created):
    # The server knows no name at all: every lookup is NXDOMAIN.
    data = verify(api, world, created).json()["data"]

    assert statuses(data) == ["failed", "failed", "failed"]


def test_a_later_check_keeps_verified_at_while_verified_and_clears_it_on_failure(
    api, world, dns, created, clock
):
    dns.publish(created["records"])
    first = verify(api, world, created).json()["data"]
    clock.advance(hours=1)
    second = verify(api, world, created).json()["data"]
    dns.records.clear()
    clock.advance(hours=1)
    third = verify(api, world, created).json()["data"]

    assert first["verified_at"] == second["verified_at"] == "2026-01-01T12:00:00Z"
    assert third["status"] == "failed"
    assert third["verified_at"] is None
    assert Domain.objects.get().checked_at == clock()


def test_verifying_another_projects_domain_is_a_404_that_asks_no_dns(api, world, dns):
    theirs = DomainFactory(project=world.other_project)

    response = api.post(f"/domains/{theirs.id}/verify", key=world.keys["project"])

    assert response.status_code == 404
    assert dns.questions == []
    assert Domain.objects.get().status == DomainStatus.PENDING


def test_verify_takes_no_members(api, world, dns, created):
    response = api.post(
        f"/domains/{created['id']}/verify", {"force": True}, key=world.keys["project"]
    )

    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["path"] == "force"
    assert dns.questions == []


def test_verify_accepts_an_empty_object(api, world, dns, created):
    response = api.post(f"/domains/{created['id']}/verify", {}, key=world.keys["project"])

    assert response.status_code == 200


def test_a_txt_lookup_joins_the_strings_of_a_long_record(settings):
    with dns_server_for(settings) as server:
        server.records["long.example"] = ["x" * 600]
        server.records["empty.example"] = []

        assert txt_lookup("long.example") == ["x" * 600]
        assert txt_lookup("empty.example") == []
        assert txt_lookup("missing.example") is None


def test_a_resolver_given_without_a_port_uses_port_53(settings):
    settings.DNS_RESOLVER = "127.0.0.1"
    settings.DNS_TIMEOUT_SECONDS = 0.3

    # Nothing serves port 53 here: the lookup fails within its time, without an error.
    assert txt_lookup("example.com") is None


@pytest.mark.parametrize(
    ("configured", "address"),
    [
        ("127.0.0.1:5353", ("127.0.0.1", 5353)),
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("[::1]:5353", ("::1", 5353)),
        ("[::1]", ("::1", 53)),
        ("::1", ("::1", 53)),
    ],
)
def test_the_resolver_setting_reads_host_and_port(configured, address):
    assert _resolver_address(configured) == address


# --- the signing key ----------------------------------------------------------------------


def signed_and_verified(key, server: DnsServer) -> bool:
    message = EmailMessage()
    message["From"] = f"Ada <ada@{key.domain}>"
    message["To"] = "bob@example.net"
    message["Subject"] = "Hello"
    message.set_content("Signed with the domain's key.\n")
    raw = message.as_bytes()
    signature = dkim.sign(
        raw,
        key.selector.encode(),
        key.domain.encode(),
        key.private_key_pem.encode(),
        include_headers=[b"from", b"to", b"subject"],
    )

    def dns_txt(name: bytes, timeout: int = 5) -> bytes | None:
        found = txt_lookup(name.decode().rstrip("."))
        return found[0].encode() if found else None

    return dkim.verify(signature + raw, dnsfunc=dns_txt)


def test_a_verified_domain_signs_mail_that_verifies_against_its_published_record(
    api, world, dns, created
):
    dns.publish(created["records"])
    assert verify(api, world, created).json()["data"]["status"] == "verified"

    key = domain_dkim_key_for(project=world.project, from_address="Ada <ada@Example.com>")

    assert key is not None
    assert key.domain == "example.com"
    assert key.selector == created["dkim_selector"]
    assert key.private_key_pem.startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert signed_and_verified(key, dns)


def test_a_signature_does_not_verify_against_another_domains_record(api, world, dns, created):
    other = api.post("/domains", {"name": "other.example"}, key=world.keys["project"]).json()
    dns.publish(created["records"])
    verify(api, world, created)
    # The selector's name now answers with the other domain's key.
    dns.records[created["records"][1]["name"]] = [other["data"]["records"][1]["value"]]

    key = domain_dkim_key_for(project=world.project, from_address="ada@example.com")

    assert not signed_and_verified(key, dns)


def test_a_domain_that_is_not_verified_gives_no_key(world):
    DomainFactory(project=world.project, name="example.com")

    assert domain_dkim_key_for(project=world.project, from_address="ada@example.com") is None


def test_a_subdomain_address_uses_its_closest_verified_parent(world):
    DomainFactory(project=world.project, name="example.com", verified=True)
    closest = DomainFactory(project=world.project, name="mail.example.com", verified=True)

    deep = domain_dkim_key_for(project=world.project, from_address="a@news.mail.example.com")
    top = domain_dkim_key_for(project=world.project, from_address="a@example.com")

    assert deep.domain == "mail.example.com"
    assert deep.selector == closest.dkim_selector
    assert top.domain == "example.com"


@pytest.mark.parametrize(
    "address", ["ada@example.org", "not an address", "", "ada@", "@example.com", "ada@com"]
)
def test_an_address_outside_the_projects_verified_domains_gives_no_key(world, address):
    DomainFactory(project=world.project, name="example.com", verified=True)
    DomainFactory(project=world.other_project, name="example.org", verified=True)

    key = domain_dkim_key_for(project=world.project, from_address=address)

    assert key is None


def test_a_domain_verified_at_is_stored_in_utc(world, clock):
    domain = DomainFactory(project=world.project, verified=True)

    assert domain.verified_at == dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
