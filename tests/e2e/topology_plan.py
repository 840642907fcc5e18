"""What the topology test sets up before its load, through the first web server and before
any kill (`Plan`): a campaign approved in the console, push devices, automations that
wait, and an import uploaded and previewed."""

import csv
import io
import json
import secrets
from dataclasses import dataclass
from typing import Any

from bench.standins import BrowserSubscription, FcmStandin, WebPushStandin
from tests.e2e.client import Api, Console, unique
from tests.e2e.flows import Flow, awaits, marks, push_app
from tests.e2e.topology import MultiHostStack

# How long a wait for an event waits.
WAIT_SECONDS = 3


def scaled(number: int, scale: float) -> int:
    return max(1, round(number * scale))


@dataclass
class Devices:
    """A contact's three installations of the push app: FCM, APNs and a browser."""

    contact_id: str
    fcm_token: str
    apns_token: str
    browser: BrowserSubscription


@dataclass
class Plan:
    """What the load works on, set up through the first web server before any kill."""

    scale: float
    key: str
    personal: str
    project_id: str
    campaign_id: str
    campaign_subject: str
    members: list[str]
    push_app: str
    devices: list[Devices]
    reply_flow: Flow
    delay_flow: Flow
    delay_subject: str
    paid_flow: Flow
    viewed: str
    import_id: str
    import_emails: list[str]
    import_audience: str
    prepared_action_id: str

    @classmethod
    def prepare(
        cls, stack: MultiHostStack, fcm: FcmStandin, webpush: WebPushStandin, *, scale: float
    ) -> "Plan":
        api = Api(stack.base_urls[0], stack.key("project"))
        personal = Api(stack.base_urls[0], stack.key("personal"), project_id=stack.project_id)
        try:
            campaign_id, campaign_subject, members = campaign(stack, api, scaled(50, scale))
            push_app, devices = push_devices(api, fcm, webpush, scaled(4, scale))
            delay_subject = unique("Later ")
            template = api.email_template(subject=delay_subject, text="A while later")
            delay = unique("browsed.")
            paid = unique("order.paid.")
            reply_flow = Flow(*flow_and_names(api, WAIT_SECONDS))
            import_id, emails, audience, prepared = import_previewed(personal, scaled(100, scale))
            return cls(
                scale=scale,
                key=stack.key("project"),
                personal=stack.key("personal"),
                project_id=stack.project_id,
                campaign_id=campaign_id,
                campaign_subject=campaign_subject,
                members=members,
                push_app=push_app,
                devices=devices,
                reply_flow=reply_flow,
                delay_flow=Flow(api.automation(waits_then_mails(delay, template)), delay),
                delay_subject=delay_subject,
                paid_flow=Flow(api.automation(marks(paid)), paid),
                viewed=unique("page.viewed."),
                import_id=import_id,
                import_emails=emails,
                import_audience=audience,
                prepared_action_id=prepared,
            )
        finally:
            api.http.close()
            personal.http.close()


def flow_and_names(api: Api, seconds: int) -> tuple[str, str, str]:
    trigger, reply = unique("ticket.opened."), unique("replied.")
    return api.automation(awaits(trigger, reply, timeout=f"PT{seconds}S")), trigger, reply


def waits_then_mails(trigger: str, template_id: str) -> dict[str, Any]:
    return {
        "trigger": {"event": trigger},
        "start": "pause",
        "steps": [
            {"key": "pause", "type": "wait", "duration": "PT1S", "next": "mail"},
            {"key": "mail", "type": "send_email", "template_id": template_id, "next": None},
        ],
    }


def campaign(stack: MultiHostStack, api: Api, size: int) -> tuple[str, str, list[str]]:
    """A campaign to an audience of `size`, approved by staff in the console."""
    subject = unique("News ")
    template = api.email_template(subject=subject, text="Hello {{ contact.email }}")
    audience = api.post("/audiences", {"name": unique("readers-")}, status=201)
    members = [unique(f"reader{number}-") + "@example.com" for number in range(size)]
    for email in members:
        api.contact(email)
        api.post(f"/audiences/{audience['id']}/members", {"email": email}, status=201)
    body = {"name": unique("news-"), "template_id": template, "audience_id": audience["id"]}
    campaign_id = str(api.post("/campaigns", body, status=201)["id"])
    api.post(f"/campaigns/{campaign_id}/actions/submit")
    console = Console(stack.base_urls[0], behind_tls_proxy=stack.behind_tls_proxy)
    console.log_in(*stack.staff)
    answer = console.action("/admin/messaging/campaign/", "approve", [campaign_id])
    assert answer.status_code == 302, answer.text[:2000]
    console.http.close()
    assert api.get(f"/campaigns/{campaign_id}")["status"] == "approved"
    return campaign_id, subject, members


def push_devices(
    api: Api, fcm: FcmStandin, webpush: WebPushStandin, size: int
) -> tuple[str, list[Devices]]:
    """A push app with its three providers, and `size` contacts with a device on each."""
    app = push_app(api, fcm)
    found = []
    for _ in range(size):
        owner = Devices(
            contact_id=api.contact(unique("device-owner-") + "@example.com"),
            fcm_token=f"fcm-{secrets.token_urlsafe(24)}",
            apns_token=secrets.token_hex(32),
            browser=webpush.subscribe(),
        )
        browser = owner.browser
        for platform, device in (
            ("fcm", {"token": owner.fcm_token}),
            ("apns", {"token": owner.apns_token}),
            (
                "webpush",
                {
                    "subscription": {
                        "endpoint": browser.endpoint,
                        "keys": {"p256dh": browser.p256dh, "auth": browser.auth_b64},
                    }
                },
            ),
        ):
            body = {"app_id": app["id"], "platform": platform, "contact_id": owner.contact_id}
            api.post("/push/installations", {**body, **device}, status=201)
        found.append(owner)
    return str(app["id"]), found


def import_previewed(personal: Api, size: int) -> tuple[str, list[str], str, str]:
    """A CSV import of `size` new contacts into a new audience, uploaded and previewed;
    its id, emails, audience name and prepared action."""
    emails = [unique(f"imported{number}-") + "@example.com" for number in range(size)]
    audience = unique("imported-")
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["Email", "Name", "List"])
    writer.writerows([email, f"Person {number}", audience] for number, email in enumerate(emails))
    mapping = {"Email": "email", "Name": "fields.first_name", "List": "audience"}
    response = personal.call(
        "POST",
        "/imports",
        files={"file": ("people.csv", text.getvalue().encode(), "text/csv")},
        data={"mapping": json.dumps(mapping)},
    )
    assert response.status_code == 201, response.text[:2000]
    upload = response.json()["data"]
    preview = personal.post(f"/imports/{upload['id']}/preview")
    assert preview["counts"][0] == {"status": "valid", "rows": size}, preview
    return str(upload["id"]), emails, audience, str(preview["prepared_action_id"])
