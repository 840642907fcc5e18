"""The sender an email step names (`from`), checked as an address with an optional name."""

import re
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email

from automations.models import StepType
from config.api.errors import Issue

_ADDRESS = re.compile(r"^\s*(?:[^<>]*<(?P<bracketed>[^<>]+)>|(?P<bare>[^<>]+))\s*$")


def sender_issues(steps: list[dict[str, Any]], prefix: str) -> list[Issue]:
    """Each email step's `from`: an address, optionally with a name."""
    issues = []
    for index, step in enumerate(steps):
        sender = step.get("from") if step["type"] == StepType.SEND_EMAIL else None
        if sender is None:
            continue
        match = _ADDRESS.fullmatch(sender)
        address = (match.group("bracketed") or match.group("bare")).strip() if match else ""
        try:
            validate_email(address)
        except DjangoValidationError:
            issues.append(
                Issue(
                    "invalid_address",
                    f"{prefix}.steps.{index}.from",
                    "Must be an address, optionally with a name: `Name <a@b.c>`.",
                )
            )
    return issues
