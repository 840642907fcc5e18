"""The real Segment clients, from their registries, pointed at a live server with a project
key as write key: `segment-analytics-python` (requirements/dev.txt) and
`@segment/analytics-node` run by Debian's nodejs (installed into a cache directory by
`make test`, scripts/ensure-services.sh ENSURE_NODE_CLIENT). Each sends a mixed batch of
every call; it lands exactly once, and sending the same messages again changes nothing."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from segment.analytics import Client

from contacts.audiences.models import AudienceMembership
from contacts.models import Contact
from events.models import Event

ROOT = Path(__file__).resolve().parents[2]
NODE = os.environ.get("NODE_BINARY") or shutil.which("node") or "/usr/bin/node"
NODE_CLIENT_DIR = Path(os.environ.get("SEGMENT_NODE_CLIENT_DIR", ROOT / ".run/node-client"))
NODE_MODULES = NODE_CLIENT_DIR / "node_modules"
NODE_SCRIPT = Path(__file__).with_name("segment_node_client.js")


def landed(prefix):
    """What the messages of one client left: events by name, the contact, its groups."""
    names = sorted(
        Event.objects.filter(source="customer", idempotency_key__startswith=prefix).values_list(
            "event", flat=True
        )
    )
    contact = Contact.objects.get(email=f"{prefix}@example.com")
    groups = list(
        AudienceMembership.objects.filter(contact=contact).values_list("audience__name", flat=True)
    )
    return names, contact, groups


def test_the_python_client_delivers_every_call_once(live_server, world):
    errors = []

    def send(*, compressed):
        client = Client(
            world.keys["project"],
            host=live_server.url,
            gzip=compressed,
            on_error=lambda error, batch: errors.append(error),
            max_retries=0,
            upload_size=100,
        )
        client.identify("py-u", {"email": "py@example.com", "plan": "pro"}, message_id="py-1")
        client.track("py-u", "Order Completed", {"total": 5}, message_id="py-2")
        client.page("py-u", name="Pricing", properties={"path": "/p"}, message_id="py-3")
        client.screen("py-u", name="Home", message_id="py-4")
        client.group("py-u", "Py Co", {"seats": 3}, message_id="py-5")
        client.alias("py-u", "py-u2", message_id="py-6")
        client.track(anonymous_id="py-anon", event="Viewed", message_id="py-7")
        client.flush()
        client.join()

    send(compressed=False)
    assert errors == []
    first = landed("py")
    send(compressed=True)  # the same messageIds again, gzipped as the client may send them
    assert errors == []
    names, contact, groups = landed("py")
    assert (names, groups) == (first[0], first[2])
    assert names == ["alias", "group", "identify", "order_completed", "page", "screen", "viewed"]
    assert (contact.external_id, contact.fields) == ("py-u2", {"plan": "pro"})
    assert groups == ["Py Co"]
    assert Event.objects.filter(source="customer").count() == 7


@pytest.mark.skipif(
    not (Path(NODE).exists() and (NODE_MODULES / "@segment/analytics-node").exists()),
    reason=(
        "The Node client test needs Debian's nodejs and @segment/analytics-node 3.1.0 in "
        f"{NODE_CLIENT_DIR}: `make test` installs it (ENSURE_NODE_CLIENT=1 "
        "scripts/ensure-services.sh), or `sudo apt-get install -y nodejs npm` first."
    ),
)
def test_the_node_client_delivers_every_call_once(live_server, world):
    def send(rounds):
        done = subprocess.run(
            [NODE, str(NODE_SCRIPT), live_server.url, world.keys["project"], str(rounds)],
            env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    send(1)
    first = landed("node")
    send(2)  # the same messageIds twice more, each by a fresh client
    names, contact, groups = landed("node")
    assert (names, groups) == (first[0], first[2])
    assert names == ["alias", "group", "identify", "order_completed", "page", "screen", "viewed"]
    assert (contact.external_id, contact.fields) == ("node-u2", {"plan": "pro"})
    assert groups == ["Node Co"]
    assert Event.objects.filter(source="customer").count() == 7
