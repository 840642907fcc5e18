"""The catalogue of system event types: every name the code records is declared by its
family, and the registry refuses a second, different declaration."""

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.registries.systemevents import (
    SystemEventType,
    register_system_event_types,
    system_event_type,
    system_event_types,
    unregister_system_event_type,
)
from tests.test_settings_documented import product_files

# How the code names the system events it records: `name="family.what"` (the outbox and
# its wrappers), `_emit(x, "family.what"` and `event="family.what"` (messaging's helpers),
# and the topics' `f"topic.{status}"`.
EMITTED = [
    re.compile(r'\bname="([a-z_]+\.[a-z_]+)"'),
    re.compile(r'_emit\(\s*\w+,\s*"([a-z_]+\.[a-z_]+)"'),
    re.compile(r'\bevent="([a-z_]+\.[a-z_]+)"'),
]
# Celery tasks (`@shared_task(name="events.sweep")`) and prepared operations
# (`Operation(name="imports.commit")`) are named the same way, after their app: no event
# family is named after an app (`contact.created`, not `contacts.`).
NOT_EVENTS = {
    "automations",
    "campaigns",
    "console",
    "events",
    "imports",
    "messaging",
    "partitions",
    "preparedactions",
    "pushproviders",
    "tenancy",
    "webhooks",
}


def emitted_names() -> set[str]:
    names = {f"topic.{status}" for status in ("subscribed", "unsubscribed")}
    for path, text in product_files().items():
        if path.endswith(".py"):
            for pattern in EMITTED:
                names.update(pattern.findall(text))
    return {name for name in names if name.split(".")[0] not in NOT_EVENTS}


def test_every_system_event_the_code_records_is_declared():
    declared = {declared.name for declared in system_event_types()}
    emitted = emitted_names()

    assert {"contact.created", "mail.send", "push.failure", "webhook.disabled"} <= emitted
    assert sorted(emitted - declared) == []


def test_a_name_is_declared_once():
    register_system_event_types(SystemEventType(name="test.thing", description="A thing."))
    try:
        # The same declaration again (an app loaded twice) is fine; another one is not.
        register_system_event_types(SystemEventType(name="test.thing", description="A thing."))
        with pytest.raises(ImproperlyConfigured):
            register_system_event_types(SystemEventType(name="test.thing", description="Else."))
        with pytest.raises(ImproperlyConfigured):
            register_system_event_types(
                SystemEventType(name="sendrealm.test.other", description="Prefixed.")
            )
        assert system_event_type("sendrealm.test.thing").description == "A thing."
        assert system_event_type("test.thing") is None
    finally:
        unregister_system_event_type("test.thing")
