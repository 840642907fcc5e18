"""The delivery policy on the running product (docs/API.md, Delivery policy), in the demo
team's second project, which no other end-to-end test sends in: a contact's frequency cap
is counted across the runs the workers advance side by side and the campaign's fan-out,
and a send in the contact's quiet hours waits for their end, when beat's sweeps wake the
deferred run and release the held campaign message. Transactional sends pass both.

Quiet hours have minute precision (`HH:MM`) and the processes run on the real clock, so
the quiet-hours test opens a window ending at the next minute boundary that leaves the
deferrals time to happen (at least WINDOW_MARGIN_SECONDS away, the one after if not); it
waits for that minute, so it runs on the production topology only (beat's sweeps are
the same on both, and test_automations.py's time-out test shows them taking waits on
each)."""

import datetime as dt
import re
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.client import Api, Console, mail_to, unique, until, until_value
from tests.e2e.stack import Stack

CAP = 2
# The zone of the quiet contact; the project's own stays UTC, so contacts without a
# `timezone` field are hours away from the window.
QUIET_ZONE = zoneinfo.ZoneInfo("Asia/Kathmandu")
# How long before its end the window must be opened: the event and the campaign's fan-out
# reach the sends in it within about a second and a half on the loaded two-core machine;
# each second more here adds one to the test's average length (about 30 s plus this).
WINDOW_MARGIN_SECONDS = 10
# After the window's end: beat's sweeps (every 5 s) wake the run and release the message.
AFTER_WINDOW_SECONDS = 30
NO_POLICIES = {"frequency_caps": [], "quiet_hours": None, "default_timezone": "UTC"}


@pytest.fixture
def second(topology: Stack) -> Iterator[Api]:
    """The second project's key; its policies are reset afterwards."""
    api = Api(topology.base_url, topology.key("other_project"))
    yield api
    api.ok("PATCH", "/project", {"policies": NO_POLICIES})
    api.http.close()


def set_policies(api: Api, **policies: Any) -> None:
    stored = api.ok("PATCH", "/project", {"policies": {**NO_POLICIES, **policies}})
    assert stored["policies"] | policies == stored["policies"], stored


def receipt_then_news(trigger: str, receipt: str, news: str) -> dict[str, Any]:
    """A transactional receipt, then a newsletter the policy applies to."""
    return {
        "trigger": {"event": trigger},
        "start": "receipt",
        "steps": [
            {
                "key": "receipt",
                "type": "send_email",
                "template_id": receipt,
                "transactional": True,
                "next": "news",
            },
            {"key": "news", "type": "send_email", "template_id": news, "next": None},
        ],
    }


def templates(api: Api) -> dict[str, str]:
    return {
        subject: api.email_template(subject=subject, text=f"{subject} for {{{{ contact.email }}}}")
        for subject in ("Receipt", "News", "Campaign")
    }


def subjects(smtp: Any, email: str) -> list[str]:
    return sorted(str(received.message["Subject"]) for received in mail_to(smtp, email))


def runs_of(api: Api, automation_id: str, contact_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"/automations/{automation_id}/runs", contact_id=contact_id))


def step_of(run: dict[str, Any], key: str) -> dict[str, Any]:
    found = [step for step in run["steps"] if step["key"] == key]
    assert len(found) == 1, run["steps"]
    return found[0]


def at(moment: str) -> dt.datetime:
    return dt.datetime.fromisoformat(moment.replace("Z", "+00:00"))


def approved_campaign(topology: Stack, api: Api, template_id: str, members: list[str]) -> str:
    """An email campaign to an audience of `members`, approved by staff in the console."""
    audience = api.post("/audiences", {"name": unique("audience-")}, status=201)
    for email in members:
        api.post(f"/audiences/{audience['id']}/members", {"email": email}, status=201)
    body = {"name": unique("campaign-"), "template_id": template_id, "audience_id": audience["id"]}
    campaign_id = str(api.post("/campaigns", body, status=201)["id"])
    api.post(f"/campaigns/{campaign_id}/actions/submit")
    console = staff_console(topology)
    answer = console.action("/admin/messaging/campaign/", "approve", [campaign_id])
    assert answer.status_code == 302, answer.text[:2000]
    console.http.close()
    return campaign_id


def staff_console(topology: Stack) -> Console:
    console = Console(topology.base_url, behind_tls_proxy=topology.behind_tls_proxy)
    console.log_in(*topology.staff)
    return console


def console_figures(topology: Stack, campaign_id: str) -> dict[str, int]:
    """The figures of the campaign's console page (its funnel and side exits)."""
    console = staff_console(topology)
    page = console.request("GET", f"/admin/messaging/campaign/{campaign_id}/change/")
    console.http.close()
    assert page.status_code == 200, page.text[:500]
    found = re.findall(
        r'<tr class="figure" data-figure="([^"]+)"><th>[^<]*</th><td>(\d+)', page.text
    )
    return {label: int(count) for label, count in found}


def test_sends_past_the_frequency_cap_are_capped_in_runs_and_campaigns(topology, second, smtp):
    api = second
    set_policies(api, frequency_caps=[{"channel": "email", "max": CAP, "per": "P1D"}])
    template = templates(api)
    trigger = unique("order.paid.")
    automation_id = api.automation(
        receipt_then_news(trigger, template["Receipt"], template["News"])
    )
    capped, other = (unique(f"{name}-") + "@example.com" for name in ("capped", "other"))
    capped_id = api.contact(capped)
    api.contact(other)

    # One more trigger than the cap, at once: the runs race for the contact's slots.
    for _ in range(CAP + 1):
        api.event(trigger, capped)
    runs = until_value(
        lambda: runs_of(api, automation_id, capped_id),
        lambda runs: len(runs) == CAP + 1 and all(run["status"] == "completed" for run in runs),
        "every run completed",
    )
    news = sorted((step_of(run, "news") for run in runs), key=lambda news: news["outcome"] or "")
    assert [(step["status"], step["outcome"]) for step in news] == [
        *[("completed", None)] * CAP,
        ("completed", "capped"),
    ]
    assert news[-1]["email_id"] is None
    assert all(step["email_id"] is not None for step in news[:CAP])
    # The transactional receipts went every time and used none of the cap.
    assert all(step_of(run, "receipt")["outcome"] is None for run in runs)
    expected = sorted(["Receipt"] * (CAP + 1) + ["News"] * CAP)
    until(lambda: subjects(smtp, capped) == expected, "the receipts and the capped news")

    # A transactional email (POST /emails) goes past the cap.
    body = {
        "from": "shop@example.com",
        "contact_id": capped_id,
        "subject": "Password",
        "text": "Reset",
    }
    assert api.post("/emails", body, status=201)["status"] == "queued"
    until(lambda: "Password" in subjects(smtp, capped), "the transactional email")

    # A campaign skips the capped contact and reaches the other.
    campaign_id = approved_campaign(topology, api, template["Campaign"], [capped, other])
    api.post(f"/campaigns/{campaign_id}/actions/send", status=202)
    sent = until_value(
        lambda: api.get(f"/campaigns/{campaign_id}"),
        lambda campaign: campaign["status"] == "sent",
        "the campaign sent",
    )
    assert (sent["stats"]["sent"], sent["stats"]["suppressed"]) == (1, 1), sent["stats"]
    until(lambda: subjects(smtp, other) == ["Campaign"], "the campaign at the other contact")
    assert "Campaign" not in subjects(smtp, capped)
    figures = console_figures(topology, campaign_id)
    assert figures.get("Skipped: capped") == 1, figures


def window_ending_soon() -> tuple[dict[str, str], dt.datetime]:
    """Quiet hours in QUIET_ZONE that hold now and end at a minute boundary at least
    WINDOW_MARGIN_SECONDS away; the window and its end."""
    now = dt.datetime.now(QUIET_ZONE)
    end = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    if (end - now).total_seconds() < WINDOW_MARGIN_SECONDS:
        end += dt.timedelta(minutes=1)
    start = end - dt.timedelta(minutes=30)
    return {"start": start.strftime("%H:%M"), "end": end.strftime("%H:%M")}, end


@pytest.mark.parametrize("topology", ["production"], indirect=True)
def test_a_send_in_quiet_hours_is_deferred_to_their_end_and_then_delivered_once(
    topology, second, smtp
):
    api = second
    template = templates(api)
    trigger = unique("order.paid.")
    automation_id = api.automation(
        receipt_then_news(trigger, template["Receipt"], template["News"])
    )
    # The quiet contact's own zone decides; the other one's is the project's (UTC).
    quiet, awake = (unique(f"{name}-") + "@example.com" for name in ("quiet", "awake"))
    quiet_id = api.contact(quiet, timezone=QUIET_ZONE.key)
    api.contact(awake)
    campaign_id = approved_campaign(topology, api, template["Campaign"], [quiet, awake])

    # The window opens last: only what needs it runs inside.
    window, end = window_ending_soon()
    set_policies(api, quiet_hours=window)
    api.event(trigger, quiet)
    api.post(f"/campaigns/{campaign_id}/actions/send", status=202)

    # The run sent the transactional receipt and parks at the newsletter until the end.
    run = until_value(
        lambda: runs_of(api, automation_id, quiet_id),
        lambda runs: len(runs) == 1 and runs[0]["status"] == "waiting",
        "the run waiting at the deferred send",
    )[0]
    news = step_of(run, "news")
    assert (news["status"], news["email_id"]) == ("deferred", None), news
    assert at(news["resume_at"]) == end
    [wait] = run["waits"]
    assert (wait["event"], at(wait["timeout_at"])) == (None, end), wait
    # Transactional sends go at once: the receipt step, and POST /emails.
    body = {
        "from": "shop@example.com",
        "contact_id": quiet_id,
        "subject": "Password",
        "text": "Reset",
    }
    api.post("/emails", body, status=201)
    until(lambda: subjects(smtp, quiet) == ["Password", "Receipt"], "the transactional sends")
    # The campaign reached the awake contact and holds the quiet one's message.
    until(lambda: subjects(smtp, awake) == ["Campaign"], "the campaign at the awake contact")
    campaign = api.get(f"/campaigns/{campaign_id}")
    assert campaign["status"] == "sending", campaign
    assert (campaign["stats"]["sent"], campaign["stats"]["queued"]) == (1, 1), campaign["stats"]
    assert subjects(smtp, quiet) == ["Password", "Receipt"]
    assert dt.datetime.now(dt.UTC) < end, "the window ended before the checks inside it"

    # At the end of the window the sweeps wake the run and release the held message.
    seconds = (end - dt.datetime.now(dt.UTC)).total_seconds() + AFTER_WINDOW_SECONDS
    expected = ["Campaign", "News", "Password", "Receipt"]
    until(lambda: subjects(smtp, quiet) == expected, "the deferred sends", seconds=seconds)
    run = until_value(
        lambda: runs_of(api, automation_id, quiet_id)[0],
        lambda run: run["status"] == "completed",
        "the run completed",
    )
    news = step_of(run, "news")
    assert (news["status"], news["outcome"], at(news["resume_at"])) == ("completed", None, end)
    assert at(news["completed_at"]) >= end
    assert at(api.get(f"/emails/{news['email_id']}")["sent_at"]) >= end
    assert run["waits"][0]["status"] == "timed_out", run["waits"]
    sent = until_value(
        lambda: api.get(f"/campaigns/{campaign_id}"),
        lambda campaign: campaign["status"] == "sent",
        "the campaign sent",
    )
    assert sent["stats"]["sent"] == 2, sent["stats"]
    assert subjects(smtp, quiet) == expected
