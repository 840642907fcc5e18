"""Which branch of a `split` step a contact takes (CONTRACT section 20): a hash of the
automation, the step's key and the contact, so one contact takes the same branch of one
step every time, in every run and every worker, and the shares follow the percents.

The hash is `sha256("<automation id>:<step key>:<contact>")`, its first 8 bytes as a
big-endian integer modulo 10,000: the bucket. Branches take consecutive ranges of
buckets, in their order, as wide as their percent in hundredths. `<contact>` is the
contact's id, or `email:<address>` for a test run by an address no contact has.
"""

import hashlib
from collections.abc import Mapping
from typing import Any

from automations.definition.splits import hundredths
from contacts.models import Contact

BUCKETS = 10_000


def split_bucket(*, automation_id: Any, step_key: str, contact: Contact | None) -> int:
    if contact is None:
        who = ""
    elif contact.pk is not None:
        who = str(contact.pk)
    else:
        who = f"email:{contact.email or ''}"
    digest = hashlib.sha256(f"{automation_id}:{step_key}:{who}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def split_choice(
    step: Mapping[str, Any], *, automation_id: Any, contact: Contact | None
) -> tuple[str, str | None]:
    """The branch the contact takes: its key and the step it goes to next."""
    bucket = split_bucket(automation_id=automation_id, step_key=step["key"], contact=contact)
    edge = 0
    branches = step["branches"]
    for branch in branches:
        edge += hundredths(branch["percent"])
        if bucket < edge:
            return branch["key"], branch["next"]
    # Percents sum to 100 (checked): only rounding could leave the last buckets.
    last = branches[-1]
    return last["key"], last["next"]
