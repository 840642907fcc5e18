"""A campaign on the running product: drafted and submitted over the API, approved by staff
in the console over HTTP (logged in, with the forms' CSRF tokens), sent, and delivered to
every member of its audience exactly once."""

from tests.e2e.client import Console, mail_to, unique, until_value

MEMBERS = 6


def test_a_campaign_approved_in_the_console_reaches_every_member_once(topology, api, smtp):
    template = api.email_template(
        subject="News for {{ contact.fields.first_name }}", text="Hello {{ contact.email }}"
    )
    audience = api.post("/audiences", {"name": unique("customers-")}, status=201)
    members = [unique(f"member{number}-") + "@example.com" for number in range(MEMBERS)]
    for number, email in enumerate(members):
        api.contact(email, first_name=f"Member {number}")
        api.post(f"/audiences/{audience['id']}/members", {"email": email}, status=201)
    campaign = api.post(
        "/campaigns",
        {"name": unique("newsletter-"), "template_id": template, "audience_id": audience["id"]},
        status=201,
    )
    campaign_id = campaign["id"]
    assert api.post(f"/campaigns/{campaign_id}/actions/submit")["status"] == "in_review"

    console = Console(topology.base_url, behind_tls_proxy=topology.behind_tls_proxy)
    console.log_in(*topology.staff)
    answer = console.action("/admin/messaging/campaign/", "approve", [campaign_id])
    assert answer.status_code == 302, answer.text[:2000]
    approved = api.get(f"/campaigns/{campaign_id}")
    assert approved["status"] == "approved", approved
    assert approved["recipient_count"] == MEMBERS

    assert api.post(f"/campaigns/{campaign_id}/actions/send", status=202)["status"] == "sending"
    sent = until_value(
        lambda: api.get(f"/campaigns/{campaign_id}"),
        lambda campaign: campaign["status"] == "sent",
        "the campaign sent",
    )

    assert sent["stats"]["sent"] == MEMBERS, sent["stats"]
    received = {email: mail_to(smtp, email) for email in members}
    assert {email: len(found) for email, found in received.items()} == dict.fromkeys(members, 1)
    subjects = sorted(found[0].message["Subject"] for found in received.values())
    assert subjects == [f"News for Member {number}" for number in range(MEMBERS)]
