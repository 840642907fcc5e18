"""The delivery policies of PATCH /project: frequency caps, quiet hours, default time zone."""

import pytest


def test_a_new_project_has_no_caps_no_quiet_hours_and_utc(api, world):
    policies = api.get("/project", key=world.keys["project"]).json()["data"]["policies"]
    assert policies["frequency_caps"] == []
    assert policies["quiet_hours"] is None
    assert policies["default_timezone"] == "UTC"


def test_caps_quiet_hours_and_zone_are_stored_and_answered(api, world):
    policies = {
        "frequency_caps": [
            {"channel": "email", "max": 2, "per": "P1D"},
            {"channel": "push", "max": 1, "per": "PT4H"},
        ],
        "quiet_hours": {"start": "21:30", "end": "08:00"},
        "default_timezone": "Europe/Berlin",
    }
    response = api.patch("/project", {"policies": policies}, key=world.keys["project"])
    assert response.status_code == 200, response.json()
    assert {k: response.json()["data"]["policies"][k] for k in policies} == policies
    again = api.get("/project", key=world.keys["project"]).json()["data"]["policies"]
    assert {k: again[k] for k in policies} == policies

    cleared = api.patch(
        "/project",
        {"policies": {"quiet_hours": None, "frequency_caps": []}},
        key=world.keys["project"],
    ).json()["data"]["policies"]
    assert cleared["quiet_hours"] is None
    assert cleared["frequency_caps"] == []
    assert cleared["default_timezone"] == "Europe/Berlin"


@pytest.mark.parametrize(
    ("policies", "path"),
    [
        ({"frequency_caps": [{"channel": "email", "max": 1, "per": "1 day"}]}, "per"),
        ({"frequency_caps": [{"channel": "email", "max": 1, "per": "P1M"}]}, "per"),
        ({"frequency_caps": [{"channel": "email", "max": 1, "per": "PT0S"}]}, "per"),
        ({"frequency_caps": [{"channel": "email", "max": 1, "per": "P400D"}]}, "per"),
        ({"frequency_caps": [{"channel": "sms", "max": 1, "per": "P1D"}]}, "channel"),
        ({"frequency_caps": [{"channel": "email", "max": 0, "per": "P1D"}]}, "max"),
        ({"frequency_caps": [{"channel": "email", "per": "P1D"}]}, "max"),
        ({"frequency_caps": [{"channel": "email", "max": 1, "per": "P1D", "x": 1}]}, "x"),
        ({"quiet_hours": {"start": "25:00", "end": "08:00"}}, "start"),
        ({"quiet_hours": {"start": "9:00", "end": "08:00"}}, "start"),
        ({"quiet_hours": {"start": "22:00", "end": "08:60"}}, "end"),
        ({"quiet_hours": {"start": "22:00", "end": "22:00"}}, "end"),
        ({"quiet_hours": {"start": "22:00"}}, "end"),
    ],
)
def test_a_bad_cap_or_window_is_a_400_at_its_member(api, world, policies, path):
    before = api.get("/project", key=world.keys["project"]).json()["data"]["policies"]
    response = api.patch("/project", {"policies": policies}, key=world.keys["project"])
    body = response.json()
    assert response.status_code == 400
    assert body["error"]["code"] == "validation_error"
    member = next(iter(policies))
    prefix = f"policies.{member}.0." if member == "frequency_caps" else f"policies.{member}."
    assert [issue["path"] for issue in body["error"]["issues"]] == [prefix + path]
    after = api.get("/project", key=world.keys["project"]).json()["data"]["policies"]
    assert after == before


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../etc/passwd", "utc+1", 5])
def test_an_unknown_time_zone_is_a_400(api, world, zone):
    response = api.patch(
        "/project", {"policies": {"default_timezone": zone}}, key=world.keys["project"]
    )
    assert response.status_code == 400
    assert [i["path"] for i in response.json()["error"]["issues"]] == ["policies.default_timezone"]


def test_two_caps_of_a_channel_with_the_same_window_are_refused(api, world):
    caps = [
        {"channel": "email", "max": 1, "per": "P1D"},
        {"channel": "email", "max": 3, "per": "PT24H"},
    ]
    response = api.patch(
        "/project", {"policies": {"frequency_caps": caps}}, key=world.keys["project"]
    )
    assert response.status_code == 400
    assert response.json()["error"]["issues"][0]["path"] == "policies.frequency_caps"
