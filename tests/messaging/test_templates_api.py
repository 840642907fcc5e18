"""Message templates through the HTTP API: create, list, read, edit, publish, restore,
delete; validation, isolation between projects and the permission matrix."""

import uuid

import pytest

from messaging.models.templates import MessageTemplate, TemplateVersion
from tests.contacts.test_contacts_api import assert_error
from tests.messaging.factories_templates import MessageTemplateFactory, TemplateVersionFactory

pytestmark = pytest.mark.django_db

TEMPLATE_MEMBERS = {
    "id",
    "name",
    "channel",
    "from",
    "draft_version_id",
    "published_version_id",
    "created_at",
    "updated_at",
    "deleted_at",
}
VERSION_MEMBERS = {
    "id",
    "template_id",
    "version_number",
    "state",
    "subject",
    "html",
    "text",
    "title",
    "body",
    "data",
    "restored_from_version_id",
    "created_at",
    "published_at",
}

WELCOME = {
    "name": "Welcome",
    "channel": "email",
    "from": "Acme <hello@acme.test>",
    "subject": "Welcome, {{ contact.fields.first_name }}",
    "html": "<h1>Hi {{ contact.fields.first_name }}</h1>",
    "text": "Hi {{ contact.fields.first_name }}",
}


def create(api, world, body=None, key="project"):
    response = api.post("/templates", body or WELCOME, key=world.keys[key])
    assert response.status_code == 201, response.content
    return response.json()["data"]


def versions(api, world, template_id):
    response = api.get(f"/templates/{template_id}/versions", key=world.keys["project"])
    assert response.status_code == 200, response.content
    return response.json()["data"]


def snapshot():
    """Every template and version as stored, to show a refused request changed nothing."""
    return (
        list(MessageTemplate.objects.order_by("id").values()),
        list(TemplateVersion.objects.order_by("id").values()),
    )


# --- create, read, list ---------------------------------------------------------------------


def test_create_an_email_template_is_201_with_its_first_draft_as_version_1(api, world):
    data = create(api, world)
    assert set(data) == TEMPLATE_MEMBERS
    assert (data["name"], data["channel"], data["from"]) == (
        "Welcome",
        "email",
        "Acme <hello@acme.test>",
    )
    assert data["published_version_id"] is None
    assert data["deleted_at"] is None
    [version] = versions(api, world, data["id"])
    assert set(version) == VERSION_MEMBERS
    assert version["id"] == data["draft_version_id"]
    assert version["template_id"] == data["id"]
    assert (version["version_number"], version["state"]) == (1, "draft")
    assert version["subject"] == WELCOME["subject"]
    assert version["html"] == WELCOME["html"]
    assert (version["title"], version["body"], version["data"]) == (None, None, None)
    assert version["published_at"] is None
    assert version["restored_from_version_id"] is None


def test_create_a_push_template_with_liquid_in_its_data(api, world):
    data = create(
        api,
        world,
        {
            "name": "Shipped",
            "channel": "push",
            "title": "Order {{ event.payload.order_id }}",
            "body": "On its way",
            "data": {"url": "/orders/{{ event.payload.order_id }}", "badge": 1},
        },
    )
    assert data["from"] is None
    [version] = versions(api, world, data["id"])
    assert version["data"] == {"url": "/orders/{{ event.payload.order_id }}", "badge": 1}
    assert (version["subject"], version["html"], version["text"]) == (None, None, None)


def test_a_template_may_start_empty(api, world):
    data = create(api, world, {"name": "Later", "channel": "email"})
    [version] = versions(api, world, data["id"])
    assert (version["subject"], version["html"], version["text"]) == (None, None, None)


def test_get_a_template(api, world):
    created = create(api, world)
    response = api.get(f"/templates/{created['id']}", key=world.keys["project"])
    assert response.status_code == 200
    assert response.json()["data"] == created


def test_list_templates_is_a_cursor_list_in_constant_queries(api, world, django_assert_num_queries):
    for index in range(5):
        template = MessageTemplateFactory(project=world.project, name=f"T{index}")
        TemplateVersionFactory(template=template, published=True)
        TemplateVersionFactory(template=template)
    MessageTemplateFactory(project=world.other_project)
    MessageTemplateFactory(project=world.project, deleted=True)
    key = world.keys["project"]
    api.get("/templates", key=key)  # the key is cached from here on
    with django_assert_num_queries(2):
        response = api.get("/templates", {"limit": 3}, key=key)
    body = response.json()
    assert body["metadata"]["total"] == 5
    assert body["metadata"]["has_more"] is True
    assert [t["name"] for t in body["data"]] == ["T0", "T1", "T2"]
    assert all(t["draft_version_id"] and t["published_version_id"] for t in body["data"])
    rest = api.get("/templates", {"after": body["metadata"]["next"]}, key=key).json()
    assert [t["name"] for t in rest["data"]] == ["T3", "T4"]
    assert rest["metadata"]["next"] is None


def test_a_tampered_cursor_is_400_at_after(api, world):
    error = assert_error(
        api.get("/templates", {"after": "nonsense"}, key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert error["issues"][0]["path"] == "after"


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"channel": "email"}, "name"),
        ({"name": "", "channel": "email"}, "name"),
        ({"name": "x" * 201, "channel": "email"}, "name"),
        ({"name": "X"}, "channel"),
        ({"name": "X", "channel": "sms"}, "channel"),
        ({"name": "X", "channel": "email", "from": "not an address"}, "from"),
        ({"name": "X", "channel": "email", "subject": 5}, "subject"),
        ({"name": "X", "channel": "email", "html": "a\u0000b"}, "html"),
        ({"name": "X", "channel": "email", "text": "lone \ud800"}, "text"),
        ({"name": "X", "channel": "push", "data": {"k": ["\ud800"]}}, "data.k.0"),
        ({"name": "X", "channel": "push", "data": ["a"]}, "data"),
        ({"name": "X", "channel": "push", "data": {"k": "x" * 17000}}, "data"),
        ({"name": "X", "channel": "email", "template": "typo"}, "template"),
    ],
)
def test_a_bad_create_body_is_400_at_the_member_and_stores_nothing(api, world, body, path):
    error = assert_error(
        api.post("/templates", body, key=world.keys["project"]), 400, "validation_error"
    )
    assert path in [issue["path"] for issue in error["issues"]]
    assert snapshot() == ([], [])


@pytest.mark.parametrize(
    ("channel", "member", "value"),
    [
        ("email", "title", "Hi"),
        ("email", "body", "Hi"),
        ("email", "data", {"a": "b"}),
        ("push", "subject", "Hi"),
        ("push", "html", "<p>Hi</p>"),
        ("push", "text", "Hi"),
    ],
)
def test_a_member_of_the_other_channel_is_400_at_its_path(api, world, channel, member, value):
    error = assert_error(
        api.post(
            "/templates",
            {"name": "X", "channel": channel, member: value},
            key=world.keys["project"],
        ),
        400,
        "validation_error",
    )
    assert [(issue["code"], issue["path"]) for issue in error["issues"]] == [
        ("wrong_channel", member)
    ]
    assert snapshot() == ([], [])


@pytest.mark.parametrize(
    ("member", "source", "line"),
    [
        ("subject", "Hi {{ contact.email", 1),
        ("html", "<p>\n  {% if contact.email %}\n  yes\n</p>", 4),
        ("text", "one\ntwo\n{{ contact.email | no_such_filter }}", 3),
        ("html", "{% include 'footer' %}", 1),
        ("text", "{% render 'footer' %}", 1),
    ],
)
def test_invalid_liquid_is_400_at_the_member_naming_the_line(api, world, member, source, line):
    error = assert_error(
        api.post(
            "/templates",
            {"name": "X", "channel": "email", member: source},
            key=world.keys["project"],
        ),
        400,
        "validation_error",
    )
    [issue] = error["issues"]
    assert (issue["code"], issue["path"]) == ("invalid_liquid", member)
    assert f"line {line}" in issue["message"]
    assert snapshot() == ([], [])


def test_invalid_liquid_inside_push_data_is_reported_at_its_dotted_path(api, world):
    error = assert_error(
        api.post(
            "/templates",
            {
                "name": "X",
                "channel": "push",
                "title": "{{ oops",
                "data": {"links": ["/ok", "{% if %}"], "deep": {"x": "{{ fine }}"}},
            },
            key=world.keys["project"],
        ),
        400,
        "validation_error",
    )
    assert [issue["path"] for issue in error["issues"]] == ["title", "data.links.1"]


# --- patch ----------------------------------------------------------------------------------


def test_patch_edits_the_draft_in_place(api, world):
    created = create(api, world)
    url = f"/templates/{created['id']}"
    response = api.patch(
        url, {"subject": "New {{ data.x }}", "text": None}, key=world.keys["project"]
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["draft_version_id"] == created["draft_version_id"]
    assert data["updated_at"] > created["updated_at"]
    [version] = versions(api, world, created["id"])
    assert (version["subject"], version["text"]) == ("New {{ data.x }}", None)
    assert version["html"] == WELCOME["html"]


def test_patch_renames_and_changes_the_sender_without_touching_versions(api, world):
    created = create(api, world)
    response = api.patch(
        f"/templates/{created['id']}",
        {"name": "Hello", "from": None},
        key=world.keys["project"],
    )
    data = response.json()["data"]
    assert (data["name"], data["from"]) == ("Hello", None)
    assert len(versions(api, world, created["id"])) == 1


def test_patch_without_a_draft_starts_one_from_the_published_version(api, world):
    created = create(api, world)
    key = world.keys["project"]
    published = api.post(f"/templates/{created['id']}/actions/publish", key=key).json()["data"]
    assert published["draft_version_id"] is None
    response = api.patch(f"/templates/{created['id']}", {"text": "Changed"}, key=key)
    data = response.json()["data"]
    assert data["published_version_id"] == created["draft_version_id"]
    assert data["draft_version_id"] not in (None, created["draft_version_id"])
    v1, v2 = versions(api, world, created["id"])
    assert (v1["state"], v2["state"], v2["version_number"]) == ("published", "draft", 2)
    assert (v2["subject"], v2["html"], v2["text"]) == (
        WELCOME["subject"],
        WELCOME["html"],
        "Changed",
    )
    assert v1["text"] == WELCOME["text"]


def test_patch_that_repeats_the_published_content_starts_no_draft(api, world):
    created = create(api, world)
    key = world.keys["project"]
    api.post(f"/templates/{created['id']}/actions/publish", key=key)
    response = api.patch(f"/templates/{created['id']}", {"text": WELCOME["text"]}, key=key)
    assert response.json()["data"]["draft_version_id"] is None
    assert len(versions(api, world, created["id"])) == 1


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, ""),
        ({"channel": "push"}, "channel"),
        ({"name": None}, "name"),
        ({"title": "Hi"}, "title"),
        ({"html": "{{ broken"}, "html"),
        ({"from": "nope"}, "from"),
        ({"subjekt": "Hi"}, "subjekt"),
    ],
)
def test_a_bad_patch_is_400_and_changes_nothing(api, world, body, path):
    created = create(api, world)
    before = snapshot()
    error = assert_error(
        api.patch(f"/templates/{created['id']}", body, key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert path in [issue["path"] for issue in error["issues"]]
    assert snapshot() == before


def test_the_channel_of_a_template_cannot_change(api, world):
    created = create(api, world)
    error = assert_error(
        api.patch(f"/templates/{created['id']}", {"channel": "push"}, key=world.keys["project"]),
        400,
        "validation_error",
    )
    assert [(i["code"], i["path"]) for i in error["issues"]] == [("read_only", "channel")]
    assert "cannot change" in error["issues"][0]["message"]


# --- publish --------------------------------------------------------------------------------


def test_publish_freezes_the_draft_and_supersedes_the_previous_version(api, world, clock):
    created = create(api, world)
    key = world.keys["project"]
    url = f"/templates/{created['id']}/actions/publish"
    first = api.post(url, key=key)
    assert first.status_code == 200
    data = first.json()["data"]
    assert (data["published_version_id"], data["draft_version_id"]) == (
        created["draft_version_id"],
        None,
    )
    [v1] = versions(api, world, created["id"])
    assert (v1["state"], v1["published_at"]) == ("published", "2026-01-01T12:00:00Z")

    clock.advance(hours=1)
    api.patch(f"/templates/{created['id']}", {"subject": "Second"}, key=key)
    second = api.post(url, {}, key=key).json()["data"]
    v1, v2 = versions(api, world, created["id"])
    assert second["published_version_id"] == v2["id"]
    assert (v1["state"], v2["state"]) == ("superseded", "published")
    assert v1["published_at"] == "2026-01-01T12:00:00Z"
    assert v2["published_at"] == "2026-01-01T13:00:00Z"


def test_publish_without_a_draft_is_409_and_changes_nothing(api, world):
    created = create(api, world)
    key = world.keys["project"]
    url = f"/templates/{created['id']}/actions/publish"
    api.post(url, key=key)
    before = snapshot()
    assert_error(api.post(url, key=key), 409, "conflict")
    assert snapshot() == before


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({"name": "X", "channel": "email", "html": "<p>Hi</p>"}, ["subject"]),
        ({"name": "X", "channel": "email", "subject": "Hi", "text": "  "}, ["html"]),
        ({"name": "X", "channel": "email"}, ["subject", "html"]),
        ({"name": "X", "channel": "push", "data": {"a": "b"}}, ["body"]),
    ],
)
def test_publishing_an_incomplete_draft_is_409_naming_what_is_missing(api, world, body, paths):
    created = create(api, world, body)
    before = snapshot()
    error = assert_error(
        api.post(f"/templates/{created['id']}/actions/publish", key=world.keys["project"]),
        409,
        "conflict",
    )
    assert [issue["path"] for issue in error["issues"]] == paths
    assert snapshot() == before


def test_publish_takes_no_body_members(api, world):
    created = create(api, world)
    assert_error(
        api.post(
            f"/templates/{created['id']}/actions/publish",
            {"version_id": created["draft_version_id"]},
            key=world.keys["project"],
        ),
        400,
        "validation_error",
    )


# --- restore --------------------------------------------------------------------------------


def test_restore_copies_an_old_version_into_a_new_draft(api, world):
    created = create(api, world)
    key = world.keys["project"]
    template_url = f"/templates/{created['id']}"
    api.post(f"{template_url}/actions/publish", key=key)
    api.patch(template_url, {"subject": "Second"}, key=key)
    api.post(f"{template_url}/actions/publish", key=key)
    api.patch(template_url, {"subject": "Third, never published"}, key=key)
    v1, v2, v3 = versions(api, world, created["id"])

    response = api.post(f"{template_url}/versions/{v1['id']}/restore", key=key)
    assert response.status_code == 201
    restored = response.json()["data"]
    assert set(restored) == VERSION_MEMBERS
    assert (restored["version_number"], restored["state"]) == (4, "draft")
    assert restored["restored_from_version_id"] == v1["id"]
    assert restored["subject"] == WELCOME["subject"]
    assert restored["published_at"] is None

    states = [(v["version_number"], v["state"]) for v in versions(api, world, created["id"])]
    # The replaced draft stays in the history; the published version is untouched.
    assert states == [(1, "superseded"), (2, "published"), (3, "superseded"), (4, "draft")]
    template = api.get(template_url, key=key).json()["data"]
    assert (template["draft_version_id"], template["published_version_id"]) == (
        restored["id"],
        v2["id"],
    )
    assert v3["id"] not in (template["draft_version_id"], template["published_version_id"])


def test_restore_of_an_unknown_version_is_404(api, world):
    created = create(api, world)
    other = create(api, world, {"name": "Other", "channel": "email"})
    before = snapshot()
    key = world.keys["project"]
    for version_id in (uuid.uuid4(), other["draft_version_id"]):
        assert_error(
            api.post(f"/templates/{created['id']}/versions/{version_id}/restore", key=key),
            404,
            "not_found",
        )
    assert snapshot() == before


def test_get_one_version(api, world):
    created = create(api, world)
    key = world.keys["project"]
    response = api.get(
        f"/templates/{created['id']}/versions/{created['draft_version_id']}", key=key
    )
    assert response.status_code == 200
    assert response.json()["data"]["version_number"] == 1
    assert_error(
        api.get(f"/templates/{created['id']}/versions/{uuid.uuid4()}", key=key), 404, "not_found"
    )


# --- delete ---------------------------------------------------------------------------------


def test_delete_soft_deletes_and_the_template_is_404_everywhere_after(api, world, clock):
    created = create(api, world)
    key = world.keys["project"]
    url = f"/templates/{created['id']}"
    response = api.delete(url, key=key)
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == created["id"]
    assert data["deleted_at"] == "2026-01-01T12:00:00Z"
    assert data["draft_version_id"] == created["draft_version_id"]
    assert MessageTemplate.objects.get(id=created["id"]).deleted_at is not None
    assert api.get("/templates", key=key).json()["metadata"]["total"] == 0
    vid = created["draft_version_id"]
    for response in (
        api.get(url, key=key),
        api.patch(url, {"name": "x"}, key=key),
        api.delete(url, key=key),
        api.get(f"{url}/versions", key=key),
        api.get(f"{url}/versions/{vid}", key=key),
        api.post(f"{url}/actions/publish", key=key),
        api.post(f"{url}/versions/{vid}/restore", key=key),
        api.post(f"{url}/preview", {}, key=key),
    ):
        assert_error(response, 404, "not_found")


# --- isolation, paths and permissions -------------------------------------------------------


def test_a_template_of_another_project_is_404_everywhere(api, world):
    foreign = create(api, world, key="other_project")
    before = snapshot()
    key = world.keys["project"]
    url = f"/templates/{foreign['id']}"
    vid = foreign["draft_version_id"]
    for response in (
        api.get(url, key=key),
        api.patch(url, {"name": "x"}, key=key),
        api.delete(url, key=key),
        api.get(f"{url}/versions", key=key),
        api.get(f"{url}/versions/{vid}", key=key),
        api.post(f"{url}/actions/publish", key=key),
        api.post(f"{url}/versions/{vid}/restore", key=key),
        api.post(f"{url}/preview", {}, key=key),
    ):
        assert_error(response, 404, "not_found")
    assert snapshot() == before
    assert api.get("/templates", key=key).json()["metadata"]["total"] == 0


def test_paths_answer_exactly_as_written(api, world):
    created = create(api, world)
    key = world.keys["project"]
    assert_error(api.get("/templates/", key=key), 404, "not_found")
    assert_error(api.get(f"/templates/{created['id']}/", key=key), 404, "not_found")
    assert_error(api.put(f"/templates/{created['id']}", {}, key=key), 405, "method_not_allowed")
    assert_error(
        api.get(f"/templates/{created['id']}/actions/publish", key=key), 405, "method_not_allowed"
    )
    assert_error(api.get("/templates"), 401, "unauthenticated")


@pytest.mark.parametrize(
    ("persona", "can_read", "can_write"),
    [
        ("project", True, True),
        ("team", True, True),
        ("personal_owner", True, True),
        ("personal_member", True, True),
        ("personal_viewer", True, False),
        ("read_only", True, False),
        ("sending", False, False),
    ],
)
def test_permission_matrix(api, world, persona, can_read, can_write):
    created = create(api, world)
    project = world.project.id if persona.startswith("personal") else None
    kw = {"key": world.keys[persona], "project": project}
    url = f"/templates/{created['id']}"
    reads = [
        api.get("/templates", **kw),
        api.get(url, **kw),
        api.get(f"{url}/versions", **kw),
        api.post(f"{url}/preview", {}, **kw),
    ]
    for response in reads:
        if can_read:
            assert response.status_code == 200, response.content
        else:
            assert_error(response, 403, "forbidden")
    before = snapshot()
    writes = [
        (api.post("/templates", {"name": "New", "channel": "email"}, **kw), 201),
        (api.patch(url, {"subject": "Changed"}, **kw), 200),
        (api.post(f"{url}/actions/publish", **kw), 200),
        (api.post(f"{url}/versions/{created['draft_version_id']}/restore", **kw), 201),
        (api.delete(url, **kw), 200),
    ]
    for response, status in writes:
        if can_write:
            assert response.status_code == status, response.content
        else:
            assert_error(response, 403, "forbidden")
    if not can_write:
        assert snapshot() == before


def test_a_personal_key_needs_the_project_header(api, world):
    assert_error(api.get("/templates", key=world.keys["personal_owner"]), 400, "project_required")
    response = api.post(
        "/templates",
        {"name": "Mine", "channel": "email"},
        key=world.keys["personal_owner"],
        project=world.other_project.id,
    )
    assert response.status_code == 201
    assert MessageTemplate.objects.get(name="Mine").project == world.other_project


def test_a_key_of_another_team_cannot_reach_the_project(api, world):
    assert_error(
        api.get("/templates", key=world.keys["foreign"], project=world.project.id),
        403,
        "forbidden",
    )
