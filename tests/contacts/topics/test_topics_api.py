import datetime as dt
import uuid

import pytest

from contacts.topics.models import Subscription, Topic
from events.models import Event
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory

pytestmark = pytest.mark.django_db


# --- topics ---------------------------------------------------------------------------------


def test_create_a_topic_defaults_to_opt_in(api, world):
    response = api.post("/topics", {"name": "Newsletter"}, key=world.keys["project"])
    assert response.status_code == 201
    data = response.json()["data"]
    assert (data["name"], data["default_status"], data["description"]) == (
        "Newsletter",
        "unsubscribed",
        None,
    )


def test_topic_names_are_unique_in_a_project_in_any_case(api, world):
    TopicFactory(project=world.project, name="Newsletter")
    assert_error(
        api.post("/topics", {"name": "newsletter"}, key=world.keys["project"]), 409, "conflict"
    )
    assert Topic.objects.count() == 1


def test_bad_topic_input_is_400(api, world):
    for body in ({}, {"name": ""}, {"name": "x", "default_status": "maybe"}, {"name": 1}):
        assert_error(api.post("/topics", body, key=world.keys["project"]), 400, "validation_error")
    assert not Topic.objects.exists()


def test_list_get_patch_delete_topics(api, world, django_assert_num_queries):
    topics = [TopicFactory(project=world.project) for _ in range(3)]
    TopicFactory(project=world.other_project)
    key = world.keys["project"]
    api.get("/topics", key=key)
    with django_assert_num_queries(2):
        listed = api.get("/topics", key=key).json()
    assert [t["id"] for t in listed["data"]] == [str(t.id) for t in topics]
    url = f"/topics/{topics[0].id}"
    assert api.get(url, key=key).json()["data"]["name"] == topics[0].name
    patched = api.patch(url, {"default_status": "subscribed"}, key=key)
    assert patched.json()["data"]["default_status"] == "subscribed"
    SubscriptionFactory(topic=topics[0])
    deleted = api.delete(url, key=key)
    assert deleted.status_code == 200
    assert deleted.json()["data"]["id"] == str(topics[0].id)
    assert not Subscription.objects.exists()
    assert_error(api.get(url, key=key), 404, "not_found")


def test_a_topic_of_another_project_is_404(api, world):
    topic = TopicFactory(project=world.other_project)
    for method in ("get", "patch", "delete"):
        body = {"name": "x"} if method == "patch" else None
        response = getattr(api, method)(f"/topics/{topic.id}", body, key=world.keys["project"])
        assert_error(response, 404, "not_found")
    assert Topic.objects.filter(id=topic.id).exists()


@pytest.mark.parametrize(
    ("persona", "can_read", "can_write"),
    [
        ("project", True, True),
        ("personal_member", True, True),
        ("personal_viewer", True, False),
        ("read_only", True, False),
        ("sending", False, False),
    ],
)
def test_permission_matrix(api, world, persona, can_read, can_write):
    topic = TopicFactory(project=world.project)
    contact = ContactFactory(project=world.project)
    project = world.project.id if persona.startswith("personal") else None
    kw = {"key": world.keys[persona], "project": project}
    for path in ("/topics", f"/topics/{topic.id}", f"/contacts/{contact.id}/subscriptions"):
        assert api.get(path, **kw).status_code == (200 if can_read else 403)
    put = api.put(
        f"/contacts/{contact.id}/subscriptions",
        {"topics": [{"topic_id": str(topic.id), "status": "subscribed"}]},
        **kw,
    )
    created = api.post("/topics", {"name": "Another"}, **kw)
    if can_write:
        assert (put.status_code, created.status_code) == (200, 201)
    else:
        assert_error(put, 403, "forbidden")
        assert_error(created, 403, "forbidden")
        assert not Subscription.objects.exists()
        assert Topic.objects.count() == 1


# --- subscriptions ----------------------------------------------------------------------------


def test_subscriptions_list_every_topic_with_the_default_or_the_explicit_choice(
    api, world, clock, django_assert_num_queries
):
    contact = ContactFactory(project=world.project)
    opt_in = TopicFactory(project=world.project, name="Newsletter")
    opt_out = TopicFactory(project=world.project, name="Product updates", opt_out=True)
    chosen = TopicFactory(project=world.project, name="Offers")
    SubscriptionFactory(topic=chosen, contact=contact, status="subscribed", source="import")
    SubscriptionFactory(topic=chosen)  # someone else's choice
    url = f"/contacts/{contact.id}/subscriptions"
    api.get(url, key=world.keys["project"])
    with django_assert_num_queries(4):
        response = api.get(url, key=world.keys["project"])
    body = response.json()
    assert body["metadata"]["total"] == 3
    rows = {row["topic_id"]: row for row in body["data"]}
    assert rows[str(opt_in.id)] == {
        "topic_id": str(opt_in.id),
        "topic_name": "Newsletter",
        "contact_id": str(contact.id),
        "status": "unsubscribed",
        "source": None,
        "changed_at": None,
    }
    assert rows[str(opt_out.id)]["status"] == "subscribed"
    assert rows[str(chosen.id)]["status"] == "subscribed"
    assert rows[str(chosen.id)]["source"] == "import"
    assert rows[str(chosen.id)]["changed_at"] == "2026-01-01T12:00:00Z"


def test_put_subscriptions_records_time_and_source_and_emits_events(api, world, clock):
    contact = ContactFactory(project=world.project)
    news = TopicFactory(project=world.project)
    updates = TopicFactory(project=world.project, opt_out=True)
    clock.set(dt.datetime(2026, 2, 1, 9, 30, tzinfo=dt.UTC))
    response = api.put(
        f"/contacts/{contact.id}/subscriptions",
        {
            "topics": [
                {"topic_id": str(news.id), "status": "subscribed"},
                {"topic_id": str(updates.id), "status": "unsubscribed"},
            ],
            "source": "preference_center",
        },
        key=world.keys["project"],
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert [(r["topic_id"], r["status"]) for r in data] == [
        (str(news.id), "subscribed"),
        (str(updates.id), "unsubscribed"),
    ]
    assert {r["source"] for r in data} == {"preference_center"}
    assert {r["changed_at"] for r in data} == {"2026-02-01T09:30:00Z"}
    subscribed = Event.objects.get(event="sendrealm.topic.subscribed")
    unsubscribed = Event.objects.get(event="sendrealm.topic.unsubscribed")
    assert subscribed.source == unsubscribed.source == "system"
    assert subscribed.payload["topic_id"] == str(news.id)
    assert unsubscribed.payload["source"] == "preference_center"


def test_put_that_keeps_the_status_emits_nothing_and_keeps_the_record(api, world, clock):
    contact = ContactFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    sub = SubscriptionFactory(topic=topic, contact=contact, status="subscribed", source="import")
    clock.advance(days=1)
    response = api.put(
        f"/contacts/{contact.id}/subscriptions",
        {"topics": [{"topic_id": str(topic.id), "status": "subscribed"}]},
        key=world.keys["project"],
    )
    assert response.status_code == 200
    assert response.json()["data"][0]["source"] == "import"
    sub.refresh_from_db()
    assert sub.changed_at == dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    assert not Event.objects.exists()


def test_an_explicit_choice_equal_to_the_default_is_recorded_without_an_event(api, world):
    contact = ContactFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    api.put(
        f"/contacts/{contact.id}/subscriptions",
        {"topics": [{"topic_id": str(topic.id), "status": "unsubscribed"}]},
        key=world.keys["project"],
    )
    assert Subscription.objects.get().source == "api"
    assert not Event.objects.exists()


def test_resubscribing_after_an_unsubscribe_emits_again(api, world):
    contact = ContactFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    url = f"/contacts/{contact.id}/subscriptions"
    for status in ("subscribed", "unsubscribed", "subscribed"):
        api.put(
            url,
            {"topics": [{"topic_id": str(topic.id), "status": status}]},
            key=world.keys["project"],
        )
    names = list(Event.objects.order_by("created_at").values_list("event", flat=True))
    assert names == [
        "sendrealm.topic.subscribed",
        "sendrealm.topic.unsubscribed",
        "sendrealm.topic.subscribed",
    ]
    assert Subscription.objects.get().status == "subscribed"


@pytest.mark.parametrize("problem", ["unknown", "other_project", "duplicate", "status", "empty"])
def test_bad_subscription_changes_reject_the_whole_request(api, world, problem):
    contact = ContactFactory(project=world.project)
    good = {"topic_id": str(TopicFactory(project=world.project).id), "status": "subscribed"}
    bad = {
        "unknown": [good, {"topic_id": str(uuid.uuid4()), "status": "subscribed"}],
        "other_project": [
            good,
            {"topic_id": str(TopicFactory(project=world.other_project).id), "status": "subscribed"},
        ],
        "duplicate": [good, good],
        "status": [good, {"topic_id": good["topic_id"], "status": "maybe"}],
        "empty": [],
    }[problem]
    error = assert_error(
        api.put(
            f"/contacts/{contact.id}/subscriptions", {"topics": bad}, key=world.keys["project"]
        ),
        400,
        "validation_error",
    )
    if problem != "empty":
        assert error["issues"][0]["path"].startswith("topics.1")
    assert not Subscription.objects.exists()
    assert not Event.objects.exists()


def test_subscriptions_of_a_deleted_or_foreign_contact_are_404(api, world):
    topic = TopicFactory(project=world.project)
    body = {"topics": [{"topic_id": str(topic.id), "status": "subscribed"}]}
    for contact in (
        ContactFactory(project=world.project, deleted=True),
        ContactFactory(project=world.other_project),
    ):
        url = f"/contacts/{contact.id}/subscriptions"
        assert_error(api.get(url, key=world.keys["project"]), 404, "not_found")
        assert_error(api.put(url, body, key=world.keys["project"]), 404, "not_found")
    assert not Subscription.objects.exists()


def test_deleting_a_contact_keeps_its_subscriptions_as_a_record(api, world):
    contact = ContactFactory(project=world.project, email="a@example.com")
    SubscriptionFactory(topic=TopicFactory(project=world.project), contact=contact)
    api.delete(f"/contacts/{contact.id}", key=world.keys["project"])
    assert Subscription.objects.filter(contact=contact).count() == 1
    fresh = api.post("/contacts/upsert", {"email": "a@example.com"}, key=world.keys["project"])
    rows = api.get(
        f"/contacts/{fresh.json()['data']['id']}/subscriptions", key=world.keys["project"]
    ).json()["data"]
    assert [row["source"] for row in rows] == [None]
