"""Concurrent edits, publishes and restores of one template against PostgreSQL: real
threads, real connections, committed transactions."""

import pytest

from messaging.models.templates import TemplateVersion, VersionState
from tests.conftest import Api
from tests.contacts.test_contacts_races import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def make_template(key: str) -> dict:
    response = Api().post(
        "/templates",
        {"name": "Busy", "channel": "email", "subject": "v0", "text": "body"},
        key=key,
    )
    assert response.status_code == 201
    return response.json()["data"]


def assert_consistent(template_id: str) -> list[TemplateVersion]:
    versions = list(
        TemplateVersion.objects.filter(template_id=template_id).order_by("version_number")
    )
    states = [v.state for v in versions]
    assert states.count(VersionState.DRAFT) <= 1
    assert states.count(VersionState.PUBLISHED) <= 1
    assert [v.version_number for v in versions] == list(range(1, len(versions) + 1))
    return versions


def test_concurrent_publishes_publish_the_draft_once(world):
    key = world.keys["project"]
    template = make_template(key)

    def publish(_: int) -> int:
        return Api().post(f"/templates/{template['id']}/actions/publish", key=key).status_code

    statuses = run_in_threads(12, publish)
    assert sorted(statuses) == [200] + [409] * 11
    [version] = assert_consistent(template["id"])
    assert version.state == VersionState.PUBLISHED


def test_concurrent_patches_and_publishes_never_make_two_drafts_or_two_published(world):
    key = world.keys["project"]
    template = make_template(key)
    Api().post(f"/templates/{template['id']}/actions/publish", key=key)

    def change(index: int) -> int:
        if index % 2:
            response = Api().post(f"/templates/{template['id']}/actions/publish", key=key)
        else:
            response = Api().patch(
                f"/templates/{template['id']}", {"subject": f"edit {index}"}, key=key
            )
        return response.status_code

    statuses = run_in_threads(20, change)
    assert set(statuses) <= {200, 409}
    assert statuses[0::2] == [200] * 10  # every PATCH lands
    versions = assert_consistent(template["id"])
    assert [v.state for v in versions].count(VersionState.PUBLISHED) == 1
    # Every successful publish froze one draft: version 1 plus one per 200 publish.
    published_ever = [v for v in versions if v.published_at is not None]
    assert len(published_ever) == 1 + statuses[1::2].count(200)


def test_concurrent_restores_leave_one_draft(world):
    key = world.keys["project"]
    template = make_template(key)
    Api().post(f"/templates/{template['id']}/actions/publish", key=key)
    source = template["draft_version_id"]

    def restore(_: int) -> int:
        return (
            Api()
            .post(f"/templates/{template['id']}/versions/{source}/restore", key=key)
            .status_code
        )

    statuses = run_in_threads(10, restore)
    assert statuses == [201] * 10
    versions = assert_consistent(template["id"])
    assert len(versions) == 11
    assert [v.state for v in versions].count(VersionState.DRAFT) == 1
