"""Writes of sending domains: creation with a DKIM key pair, DNS verification, deletion;
and the signing key email sending asks for."""

import base64
import logging
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parseaddr
from secrets import token_hex
from typing import Any

import dns.exception
import dns.name
import dns.resolver
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Length

from config.api.errors import NotFound, ValidationFailed, or_404
from config.runtime import clock, secrets
from messaging import conf
from messaging.errors import DomainTaken
from messaging.models import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.selectors.domains import domain_get
from tenancy.models import Project

logger = logging.getLogger(__name__)

DKIM_KEY_BITS = 2048
DKIM_SELECTOR_PREFIX = "sr"
DKIM_SELECTOR_RANDOM_BYTES = 4
DMARC_VALUE = "v=DMARC1; p=none; adkim=r; aspf=r"
# The longest record name is `<selector>._domainkey.<name>`; DNS names end at 253 characters.
MAX_NAME_LENGTH = (
    253 - len(DKIM_SELECTOR_PREFIX) - 2 * DKIM_SELECTOR_RANDOM_BYTES - len("._domainkey.")
)
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class DkimKey:
    """What signing a message needs: `d=` domain, `s=` selector and the private key."""

    selector: str
    domain: str
    private_key_pem: str


def domain_name_normalised(raw: Any) -> str:
    """The ASCII (IDNA), lower-case form of a domain name; a 400 at `name` when it is not a
    name with at least two labels, or ends with a dot."""

    def invalid(message: str, code: str = "invalid_domain") -> ValidationFailed:
        return ValidationFailed.at("name", message, code=code)

    if not isinstance(raw, str):
        raise invalid("Must be a string.", "invalid_type")
    name = raw.strip().lower()
    if name.endswith("."):
        raise invalid("Give the name without a trailing dot.")
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        raise invalid("Must be a valid domain name.") from None
    labels = name.split(".")
    if len(labels) < 2:
        raise invalid("Must have at least two labels, such as example.com.")
    if not all(_LABEL.match(label) for label in labels) or labels[-1].isdigit():
        raise invalid("Must be a valid domain name.")
    if len(name) > MAX_NAME_LENGTH:
        raise invalid(f"Must be at most {MAX_NAME_LENGTH} characters long.")
    return name


def dkim_key_pair() -> tuple[str, str]:
    """A new RSA key: (private key as PKCS#1 PEM, public key as base64 DER for `p=`)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=DKIM_KEY_BITS)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode("ascii")
    public_der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_pem, base64.b64encode(public_der).decode("ascii")


def _records_for(domain: Domain, public_key: str) -> list[DomainRecord]:
    return [
        DomainRecord(
            domain=domain,
            purpose=RecordPurpose.SPF,
            name=domain.name,
            value=f"v=spf1 include:{conf.sending_spf_include()} ~all",
        ),
        DomainRecord(
            domain=domain,
            purpose=RecordPurpose.DKIM,
            name=f"{domain.dkim_selector}._domainkey.{domain.name}",
            value=f"v=DKIM1; k=rsa; p={public_key}",
        ),
        DomainRecord(
            domain=domain,
            purpose=RecordPurpose.DMARC,
            name=f"_dmarc.{domain.name}",
            value=DMARC_VALUE,
        ),
    ]


def domain_create(*, project: Project, name: Any) -> Domain:
    """Adds a sending domain with a new 2048-bit DKIM key (encrypted at rest) and the SPF,
    DKIM and DMARC records to publish. A name the project already has is a 409."""
    normalised = domain_name_normalised(name)
    # Key generation is CPU work: done before the transaction, which stays short.
    private_pem, public_key = dkim_key_pair()
    domain = Domain(
        project=project,
        name=normalised,
        dkim_selector=f"{DKIM_SELECTOR_PREFIX}{token_hex(DKIM_SELECTOR_RANDOM_BYTES)}",
        dkim_private_key_encrypted=secrets.encrypt(private_pem),
    )
    try:
        with transaction.atomic():
            domain.save(force_insert=True)
            DomainRecord.objects.bulk_create(_records_for(domain, public_key))
    except IntegrityError:
        raise DomainTaken() from None
    return or_404(domain_get(project=project, domain_id=domain.id), "No such domain.")


def domain_delete(*, project: Project, domain_id: uuid.UUID | str) -> Domain:
    """Removes a domain with its records and key; returns it as it was."""
    domain = or_404(domain_get(project=project, domain_id=domain_id), "No such domain.")
    if Domain.objects.filter(pk=domain.pk).delete()[0] == 0:
        raise NotFound("No such domain.")
    return domain


# Verification ---------------------------------------------------------------------------


def _resolver_address(configured: str) -> tuple[str, int]:
    """`host`, `host:port`, `[v6]` or `[v6]:port` (a bare IPv6 address is a host)."""
    host, raw_port = configured, ""
    if configured.startswith("["):
        host, _, rest = configured[1:].partition("]")
        raw_port = rest.removeprefix(":")
    elif configured.count(":") == 1:
        host, _, raw_port = configured.partition(":")
    if not host or (raw_port and not raw_port.isdigit()):
        raise ImproperlyConfigured("DNS_RESOLVER must be host or host:port.")
    return host, int(raw_port or 53)


def _resolver() -> dns.resolver.Resolver:
    """The system's resolver, or the server named by DNS_RESOLVER."""
    configured = conf.dns_resolver()
    if configured:
        resolver = dns.resolver.Resolver(configure=False)
        host, resolver.port = _resolver_address(configured)
        resolver.nameservers = [host]
    else:
        resolver = dns.resolver.Resolver()
    resolver.timeout = resolver.lifetime = conf.dns_timeout_seconds()
    return resolver


def txt_lookup(name: str) -> list[str] | None:
    """The TXT records at `name`, each one's strings joined; [] when the name has none,
    None when the lookup failed (no such name, time-out, no server answered)."""
    try:
        answer = _resolver().resolve(
            dns.name.from_text(name), "TXT", raise_on_no_answer=False, search=False
        )
    except (dns.exception.DNSException, OSError) as error:
        logger.info("TXT lookup of %s failed: %s", name, type(error).__name__)
        return None
    if answer.rrset is None:
        return []
    return [b"".join(rdata.strings).decode("utf-8", errors="replace") for rdata in answer.rrset]


def _tags(text: str) -> dict[str, str]:
    """`k=v; k=v` tag lists of DKIM and DMARC records; whitespace inside values dropped."""
    tags = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            tags[key.strip().lower()] = re.sub(r"\s+", "", value)
    return tags


def _spf_matches(expected: str, found: list[str]) -> bool:
    # One SPF record (two are a permanent error for receivers) with each of our includes.
    spf = [text.split() for text in found if text.lower().split()[:1] == ["v=spf1"]]
    if len(spf) != 1:
        return False
    published = {term.lower().lstrip("+") for term in spf[0]}
    return all(term in published for term in expected.lower().split() if "include:" in term)


def _dkim_matches(expected: str, found: list[str]) -> bool:
    key = _tags(expected)["p"]
    for text in found:
        tags = _tags(text)
        if (
            tags.get("p") == key
            and tags.get("v", "DKIM1") == "DKIM1"
            and tags.get("k", "rsa").lower() == "rsa"
        ):
            return True
    return False


def _dmarc_matches(expected: str, found: list[str]) -> bool:
    return len([text for text in found if _tags(text).get("v") == "DMARC1"]) == 1


_MATCHERS = {
    RecordPurpose.SPF: _spf_matches,
    RecordPurpose.DKIM: _dkim_matches,
    RecordPurpose.DMARC: _dmarc_matches,
}


def _record_status(record: DomainRecord, found: list[str] | None) -> str:
    if found is None:
        return DomainStatus.FAILED
    matches = _MATCHERS[RecordPurpose(record.purpose)](record.value, found)
    return DomainStatus.VERIFIED if matches else DomainStatus.FAILED


def domain_verify(*, project: Project, domain_id: uuid.UUID | str) -> Domain:
    """Looks up the domain's records over DNS now and stores what was found: each record
    `verified` or `failed`, the domain `verified` when its SPF and DKIM records match.

    The lookups run at once, outside any transaction, each bounded by DNS_TIMEOUT_SECONDS;
    a failed lookup fails its record and never the request.
    """
    domain = or_404(domain_get(project=project, domain_id=domain_id), "No such domain.")
    records = list(domain.records.all())
    with ThreadPoolExecutor(max_workers=len(records)) as pool:
        found = list(pool.map(txt_lookup, [record.name for record in records]))
    statuses = {
        record.pk: _record_status(record, texts)
        for record, texts in zip(records, found, strict=True)
    }
    verified = all(
        statuses[record.pk] == DomainStatus.VERIFIED
        for record in records
        if record.purpose in (RecordPurpose.SPF, RecordPurpose.DKIM)
    )
    now = clock.now()
    with transaction.atomic():
        updated = Domain.objects.filter(pk=domain.pk).update(
            status=DomainStatus.VERIFIED if verified else DomainStatus.FAILED,
            checked_at=now,
            # Kept while the domain stays verified: it says since when.
            verified_at=Coalesce(F("verified_at"), Value(now)) if verified else None,
        )
        if updated == 0:
            raise NotFound("No such domain.")
        for record in records:
            DomainRecord.objects.filter(pk=record.pk).update(status=statuses[record.pk])
    return or_404(domain_get(project=project, domain_id=domain.id), "No such domain.")


# Signing --------------------------------------------------------------------------------


def domain_dkim_key_for(*, project: Project, from_address: str) -> DkimKey | None:
    """The key to DKIM-sign mail from `from_address` (`a@b` or `Name <a@b>`): that of the
    project's verified domain for the address's host, else for its closest parent domain
    (DMARC's relaxed alignment); None when there is none, so the message goes unsigned.

    Raises config.runtime.secrets.SecretUnreadable when the stored key cannot be decrypted.
    """
    _, address = parseaddr(from_address)
    local, at, host = address.rpartition("@")
    if not (local and at):
        return None
    host = host.strip().lower()
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = host.split(".")
    candidates = [".".join(labels[i:]) for i in range(len(labels) - 1)]
    if not candidates:
        return None
    domain = (
        Domain.objects.filter(project=project, status=DomainStatus.VERIFIED, name__in=candidates)
        .order_by(Length("name").desc())
        .only("name", "dkim_selector", "dkim_private_key_encrypted")
        .first()
    )
    if domain is None:
        return None
    return DkimKey(
        selector=domain.dkim_selector,
        domain=domain.name,
        private_key_pem=secrets.decrypt(domain.dkim_private_key_encrypted),
    )
