"""Push on the running product: one app with an FCM, an APNs and a Web Push provider, a
contact with a device on each, and a send that reaches the three loopback stand-ins (which
check what the real providers check)."""

import secrets

from bench import keys
from tests.e2e.client import unique, until_value
from tests.pushproviders.sending import APNS_BUNDLE_ID, APNS_KEY_ID, APNS_TEAM_ID


def test_a_send_reaches_the_contact_s_devices_on_fcm_apns_and_web_push(
    topology, api, fcm, apns, webpush
):
    app = api.post("/push/apps", {"name": unique("app-")}, status=201)
    providers = {
        "fcm": {"service_account": keys.service_account(token_uri=fcm.token_uri)},
        "apns": {
            "apns_key_id": APNS_KEY_ID,
            "apns_team_id": APNS_TEAM_ID,
            "apns_private_key": keys.apns_p8(),
            "apns_bundle_id": APNS_BUNDLE_ID,
            "apns_environment": "sandbox",
        },
        "webpush": {
            "web_vapid_private_key": keys.vapid_pair()[0],
            "web_vapid_public_key": keys.vapid_pair()[1],
            "web_vapid_subject": "mailto:push@example.com",
        },
    }
    for platform, settings in providers.items():
        api.post(
            f"/push/apps/{app['id']}/providers", {"platform": platform, **settings}, status=201
        )
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
