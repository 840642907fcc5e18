"""Quiet hours across midnight and daylight-saving changes, and the policy read from a
project (messaging/services/policy.py)."""

import datetime as dt
import zoneinfo

import pytest

from messaging.services.policy import NO_POLICY, Cap, DeliveryPolicy, policy_of, quiet_end
from tenancy.models import Project

NEW_YORK = zoneinfo.ZoneInfo("America/New_York")
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def hm(text: str) -> dt.time:
    return dt.time.fromisoformat(text)


@pytest.mark.parametrize(
    ("at", "start", "end", "ends"),
    [
        # A window within one day (13:00 to 15:00 in Berlin is 12:00 to 14:00 UTC):
        # inside until its end, outside before and after.
        ("2026-01-10 13:00", "13:00", "15:00", "2026-01-10 14:00"),
        ("2026-01-10 11:59", "13:00", "15:00", None),
        ("2026-01-10 14:00", "13:00", "15:00", None),
        # Past midnight (Berlin is UTC+1 in January): before midnight it ends tomorrow,
        # after midnight today.
        ("2026-01-10 21:00", "22:00", "08:00", "2026-01-11 07:00"),
        ("2026-01-10 02:00", "22:00", "08:00", "2026-01-10 07:00"),
        ("2026-01-10 07:00", "22:00", "08:00", None),
        ("2026-01-10 20:59", "22:00", "08:00", None),
    ],
)
def test_quiet_hours_end_at_the_next_end_of_the_window_in_berlin(at, start, end, ends):
    found = quiet_end(utc(at), BERLIN, hm(start), hm(end))
    assert found == (utc(ends) if ends else None)


def test_a_window_end_the_clocks_skip_ends_at_the_jump():
    # 8 March 2026, New York: 02:00 EST becomes 03:00 EDT (07:00 UTC); 02:30 never
    # happens, so a window ending at 02:30 ends at the jump.
    at = utc("2026-03-08 06:30")  # 01:30 EST
    assert quiet_end(at, NEW_YORK, hm("01:00"), hm("02:30")) == utc("2026-03-08 07:00")
    # A window from 22:00 to 08:00 that night is an hour shorter, ending at 08:00 EDT.
    assert quiet_end(utc("2026-03-08 04:00"), NEW_YORK, hm("22:00"), hm("08:00")) == utc(
        "2026-03-08 12:00"
    )


def test_a_window_end_the_clocks_show_twice_ends_at_its_first_occurrence():
    # 1 November 2026, New York: 02:00 EDT becomes 01:00 EST; 01:30 happens twice
    # (05:30 and 06:30 UTC).
    start, end = hm("00:00"), hm("01:30")
    assert quiet_end(utc("2026-11-01 05:15"), NEW_YORK, start, end) == utc("2026-11-01 05:30")
    # 01:15 EST, the second time round: the window already ended at the first 01:30.
    assert quiet_end(utc("2026-11-01 06:15"), NEW_YORK, start, end) is None
    # A window past midnight that night is an hour longer: 22:00 EDT to 08:00 EST.
    assert quiet_end(utc("2026-11-01 02:00"), NEW_YORK, hm("22:00"), hm("08:00")) == utc(
        "2026-11-01 13:00"
    )


def test_the_contacts_zone_wins_and_an_unknown_one_falls_back_to_the_projects():
    policy = DeliveryPolicy(quiet=(hm("22:00"), hm("08:00")), zone="Europe/Berlin")
    at = utc("2026-01-10 23:30")  # 00:30 in Berlin, 18:30 in New York
    assert policy.quiet_until(at, {"timezone": "America/New_York"}) is None
    assert policy.quiet_until(at, {}) == utc("2026-01-11 07:00")
    assert policy.quiet_until(at, {"timezone": "Nowhere/Atlantis"}) == utc("2026-01-11 07:00")
    assert policy.quiet_until(at, {"timezone": 42}) == utc("2026-01-11 07:00")
    assert policy.quiet_until(at, None) == utc("2026-01-11 07:00")


@pytest.mark.django_db
def test_a_projects_policy_is_read_from_its_stored_shape(world):
    project = Project.objects.get(pk=world.project.pk)
    assert policy_of(project) is NO_POLICY
    project.frequency_caps = [
        {"channel": "email", "max": 2, "per": "P1D"},
        {"channel": "push", "max": 1, "per": "PT1H"},
    ]
    project.quiet_hours = {"start": "21:00", "end": "07:00"}
    project.default_timezone = "Asia/Tokyo"
    policy = policy_of(project)
    assert policy.caps_of("email") == (Cap("email", 2, dt.timedelta(days=1)),)
    assert policy.caps_of("push") == (Cap("push", 1, dt.timedelta(hours=1)),)
    assert policy.quiet == (hm("21:00"), hm("07:00"))
    assert policy.zone == "Asia/Tokyo"
