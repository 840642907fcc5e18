"""Push on the running product: one app with an FCM, an APNs and a Web Push provider, a
contact with a device on each, and a send that reaches the three loopback stand-ins (which
check what the real providers check)."""

import secrets

from tests.e2e.client import unique, until_value
from tests.e2e.flows import push_app


def test_a_send_reaches_the_contact_s_devices_on_fcm_apns_and_web_push(
    topology, api, fcm, apns, webpush
):
    app = push_app(api, fcm)
    contact_id = api.contact(unique("device-owner-") + "@example.com")
    fcm_token = f"fcm-{secrets.token_urlsafe(24)}"
    apns_token = secrets.token_hex(32)
    browser = webpush.subscribe()
    devices = {
        "fcm": {"token": fcm_token},
        "apns": {"token": apns_token},
        "webpush": {
            "subscription": {
                "endpoint": browser.endpoint,
                "keys": {"p256dh": browser.p256dh, "auth": browser.auth_b64},
            }
        },
    }
    for platform, device in devices.items():
        api.post(
            "/push/installations",
            {"app_id": app["id"], "platform": platform, "contact_id": contact_id, **device},
            status=201,
        )
    body = unique("Your order shipped ")

    message = api.post(
        "/push/send",
        {"app_id": app["id"], "contact_id": contact_id, "title": "Order", "body": body},
        status=202,
    )

    sent = until_value(
        lambda: api.get(f"/push/messages/{message['id']}"),
        lambda message: message["status"] != "queued",
        "the push message delivered",
    )
    assert sent["status"] == "sent", sent
    assert [delivery["status"] for delivery in sent["deliveries"]] == ["sent"] * 3, sent
    to_fcm = [m for m in fcm.messages if m["token"] == fcm_token]
    assert [m["notification"] for m in to_fcm] == [{"title": "Order", "body": body}]
    to_apns = [r for r in apns.delivered if r.headers[":path"] == f"/3/device/{apns_token}"]
    assert len(to_apns) == 1
    assert [m for m in browser.received] == [
        {**browser.received[0], "title": "Order", "body": body}
    ]
    assert fcm.problems == apns.problems == webpush.problems == []
