"""Sending domains: the DNS records that authorise the service to send for a domain."""

import uuid

from django.db import models

from config.runtime import clock
from tenancy.models import Project


class DomainStatus(models.TextChoices):
    """Of a domain and of each of its records: `pending` until the first check."""

    PENDING = "pending"
    VERIFIED = "verified"
    FAILED = "failed"


class RecordPurpose(models.TextChoices):
    SPF = "spf"
    DKIM = "dkim"
    DMARC = "dmarc"


class Domain(models.Model):
    """A domain a project sends from, with the DKIM key pair made for it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="domains")
    # ASCII form (IDNA), lower case, no trailing dot.
    name = models.CharField(max_length=253)
    status = models.CharField(
        max_length=16, choices=DomainStatus.choices, default=DomainStatus.PENDING
    )
    dkim_selector = models.CharField(max_length=63)
    # PKCS#1 PEM encrypted with config.runtime.secrets; never shown or logged.
    dkim_private_key_encrypted = models.TextField()
    created_at = models.DateTimeField(default=clock.now)
    checked_at = models.DateTimeField(null=True, blank=True)
    # Set while the domain is verified: when the check that found it so first ran.
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="domain_one_per_name"),
        ]

    def __str__(self) -> str:
        return self.name


class DomainRecord(models.Model):
    """A DNS record the domain's owner publishes, and what the last check found."""

    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, related_name="records")
    purpose = models.CharField(max_length=8, choices=RecordPurpose.choices)
    type = models.CharField(max_length=8, default="TXT")
    name = models.CharField(max_length=253)
    value = models.TextField()
    status = models.CharField(
        max_length=16, choices=DomainStatus.choices, default=DomainStatus.PENDING
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["domain", "purpose"], name="domain_record_one_each"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.name}"
