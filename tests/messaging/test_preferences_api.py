"""`GET` and `PATCH /contacts/{id}/preferences`: a contact's topics and "unsubscribe from
all", through the API."""

import uuid

import pytest

from contacts.topics.models import Subscription, SubscriptionSource, SubscriptionStatus
from events.models import Event
from messaging.models import Suppression, SuppressionReason
from tests.contacts.factories import ContactFactory
from tests.contacts.test_contacts_api import assert_error
from tests.contacts.topics.factories import SubscriptionFactory, TopicFactory
from tests.messaging.factories_suppressions import SuppressionFactory

pytestmark = pytest.mark.django_db


def url(contact) -> str:
    return f"/contacts/{contact.id}/preferences"


def names() -> list[str]:
    return list(Event.objects.order_by("created_at").values_list("event", flat=True))


@pytest.fixture
def setup(world):
    contact = ContactFactory(project=world.project, email="ada@example.com")
    news = TopicFactory(project=world.project, name="Newsletter")
    updates = TopicFactory(project=world.project, name="Product Updates", opt_out=True)
    offers = TopicFactory(project=world.project, name="Offers")
    SubscriptionFactory(topic=offers, contact=contact, status=SubscriptionStatus.SUBSCRIBED)
    TopicFactory(project=world.other_project, name="Elsewhere")
    return contact, news, updates, offers


def test_get_lists_every_topic_with_the_contacts_state(
    api, world, setup, django_assert_num_queries
):
    contact, news, updates, offers = setup
    api.get(url(contact), key=world.keys["project"])
    # The key and project come from the local cache; then the contact, the topics, the
    # contact's choices and the suppression list.
    with django_assert_num_queries(4):
        response = api.get(url(contact), key=world.keys["project"])
    assert response.status_code == 200
    assert response.json() == {
        "status": 200,
        "data": {
            "topics": [
                {
                    "topic_id": str(news.id),
                    "key": "newsletter",
                    "name": "Newsletter",
                    "subscribed": False,
                },
                {
                    "topic_id": str(updates.id),
                    "key": "product updates",
                    "name": "Product Updates",
                    "subscribed": True,
                },
                {"topic_id": str(offers.id), "key": "offers", "name": "Offers", "subscribed": True},
            ],
            "unsubscribed_all": False,
        },
    }


def test_patch_changes_the_topics_named_through_the_topics_service(api, world, setup):
    contact, news, updates, offers = setup
    body = {
        "topics": [
            {"topic_id": str(news.id), "subscribed": True},
            {"topic_id": str(updates.id), "subscribed": False},
        ]
    }

    response = api.patch(url(contact), body, key=world.keys["project"])

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert [t["subscribed"] for t in data["topics"]] == [True, False, True]
    assert data["unsubscribed_all"] is False
    statuses = dict(Subscription.objects.filter(contact=contact).values_list("topic_id", "status"))
    assert statuses == {news.id: "subscribed", updates.id: "unsubscribed", offers.id: "subscribed"}
    assert names() == ["sendrealm.topic.subscribed", "sendrealm.topic.unsubscribed"]
    event = Event.objects.get(event="sendrealm.topic.unsubscribed")
    assert event.payload == {
        "topic_id": str(updates.id),
        "topic_name": "Product Updates",
        "contact_id": str(contact.id),
        "source": SubscriptionSource.API,
    }
    assert event.contact_id == contact.id


def test_patch_is_idempotent(api, world, setup):
    contact, news, _, _ = setup
    body = {"topics": [{"topic_id": str(news.id), "subscribed": True}], "unsubscribed_all": False}

    first = api.patch(url(contact), body, key=world.keys["project"])
    second = api.patch(url(contact), body, key=world.keys["project"])

    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert names() == ["sendrealm.topic.subscribed"]
    assert Subscription.objects.filter(contact=contact).count() == 2


def test_a_get_answer_can_be_sent_back_as_it_is(api, world, setup):
    contact, *_ = setup
    read = api.get(url(contact), key=world.keys["project"]).json()["data"]
    read["topics"][0]["subscribed"] = True
    read["topics"][0]["name"] = "Ignored: topics are renamed with PATCH /topics/{id}"

    response = api.patch(url(contact), read, key=world.keys["project"])

    assert response.status_code == 200, response.content
    assert response.json()["data"]["topics"][0] == {**read["topics"][0], "name": "Newsletter"}
    assert names() == ["sendrealm.topic.subscribed"]


def test_unsubscribe_from_all_leaves_every_topic_and_suppresses_the_address(api, world, setup):
    contact, news, updates, offers = setup

    response = api.patch(url(contact), {"unsubscribed_all": True}, key=world.keys["project"])

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["unsubscribed_all"] is True
    assert [t["subscribed"] for t in data["topics"]] == [False, False, False]
    # An explicit choice for every topic: a topic made opt-out later keeps it off.
    assert set(Subscription.objects.filter(contact=contact).values_list("topic_id", "status")) == {
        (news.id, "unsubscribed"),
        (updates.id, "unsubscribed"),
        (offers.id, "unsubscribed"),
    }
    entry = Suppression.objects.get(project=world.project)
    assert (entry.email, entry.reason) == ("ada@example.com", SuppressionReason.UNSUBSCRIBE)
    assert sorted(names()) == [
        "sendrealm.mail.unsubscribe",
        "sendrealm.topic.unsubscribed",
        "sendrealm.topic.unsubscribed",
    ]
    unsubscribe = Event.objects.get(event="sendrealm.mail.unsubscribe")
    assert unsubscribe.payload == {
        "email_id": None,
        "contact_id": str(contact.id),
        "template_id": None,
        "topic_id": None,
        "source": "api",
    }

    again = api.patch(url(contact), {"unsubscribed_all": True}, key=world.keys["project"])

    assert again.json() == response.json()
    assert len(names()) == 3
    assert Suppression.objects.count() == 1


def test_unsubscribed_all_false_lifts_the_contacts_own_unsubscribe(api, world, setup):
    contact, news, _, _ = setup
    api.patch(url(contact), {"unsubscribed_all": True}, key=world.keys["project"])
    body = {"unsubscribed_all": False, "topics": [{"topic_id": str(news.id), "subscribed": True}]}

    response = api.patch(url(contact), body, key=world.keys["project"])

    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["unsubscribed_all"] is False
    assert [t["subscribed"] for t in data["topics"]] == [True, False, False]
    assert not Suppression.objects.exists()


def test_a_suppression_the_contact_did_not_choose_is_not_lifted(api, world, setup):
    contact, news, *_ = setup
    SuppressionFactory(project=world.project, email="ada@example.com", reason="bounce")
    assert api.get(url(contact), key=world.keys["project"]).json()["data"]["unsubscribed_all"]
    body = {"unsubscribed_all": False, "topics": [{"topic_id": str(news.id), "subscribed": True}]}

    error = assert_error(api.patch(url(contact), body, key=world.keys["project"]), 409, "conflict")

    assert error["issues"] == [
        {
            "code": "suppressed",
            "path": "unsubscribed_all",
            "message": "The address is suppressed for `bounce`.",
        }
    ]
    assert Suppression.objects.get().reason == "bounce"
    assert not Subscription.objects.filter(topic=news).exists()
    assert names() == []


def test_unsubscribe_from_all_needs_an_address(api, world):
    contact = ContactFactory(project=world.project, email=None, external_id="u-1")
    topic = TopicFactory(project=world.project, opt_out=True)

    error = assert_error(
        api.patch(url(contact), {"unsubscribed_all": True}, key=world.keys["project"]),
        409,
        "conflict",
    )

    assert error["issues"][0]["path"] == "unsubscribed_all"
    assert not Subscription.objects.exists()
    assert names() == []
    # Its topics can still be changed, and `unsubscribed_all: false` is already so.
    body = {"topics": [{"topic_id": str(topic.id), "subscribed": False}], "unsubscribed_all": False}
    response = api.patch(url(contact), body, key=world.keys["project"])
    assert response.status_code == 200
    assert response.json()["data"]["topics"][0]["subscribed"] is False


@pytest.mark.parametrize(
    ("problem", "path", "code"),
    [
        ("unknown", "topics.1.topic_id", "not_found"),
        ("other_project", "topics.1.topic_id", "not_found"),
        ("duplicate", "topics.1.topic_id", "duplicate"),
        ("id_number", "topics.1.topic_id", "invalid"),
        ("id_malformed", "topics.1.topic_id", "invalid"),
        ("subscribed_string", "topics.1.subscribed", "invalid"),
        ("subscribed_missing", "topics.1.subscribed", "required"),
        ("unknown_member", "topics.1.status", "unknown_member"),
        ("all_string", "unsubscribed_all", "invalid"),
        ("all_null", "unsubscribed_all", "null"),
        ("topics_object", "topics", "not_a_list"),
        ("empty", "", "invalid"),
        ("top_unknown", "source", "unknown_member"),
        ("subscribe_while_leaving_all", "topics.0.subscribed", "conflict"),
    ],
)
def test_bad_input_is_400_with_issues_and_changes_nothing(api, world, setup, problem, path, code):
    contact, news, _, _ = setup
    good = {"topic_id": str(news.id), "subscribed": True}
    body = {
        "unknown": {"topics": [good, {"topic_id": str(uuid.uuid4()), "subscribed": True}]},
        "other_project": {
            "topics": [
                good,
                {"topic_id": str(TopicFactory(project=world.other_project).id), "subscribed": True},
            ]
        },
        "duplicate": {"topics": [good, good]},
        "id_number": {"topics": [good, {"topic_id": 5, "subscribed": True}]},
        "id_malformed": {"topics": [good, {"topic_id": "news", "subscribed": True}]},
        "subscribed_string": {"topics": [good, {"topic_id": str(news.id), "subscribed": "true"}]},
        "subscribed_missing": {"topics": [good, {"topic_id": str(news.id)}]},
        "unknown_member": {"topics": [good, {**good, "status": "subscribed"}]},
        "all_string": {"unsubscribed_all": "yes"},
        "all_null": {"unsubscribed_all": None},
        "topics_object": {"topics": good},
        "empty": {},
        "top_unknown": {"topics": [good], "source": "api"},
        "subscribe_while_leaving_all": {"topics": [good], "unsubscribed_all": True},
    }[problem]

    error = assert_error(
        api.patch(url(contact), body, key=world.keys["project"]), 400, "validation_error"
    )

    assert {"path": path, "code": code} in [
        {"path": issue["path"], "code": issue["code"]} for issue in error["issues"]
    ], error
    assert Subscription.objects.filter(contact=contact).count() == 1
    assert not Suppression.objects.exists()
    assert names() == []


def test_bad_json_is_400(api, world, setup):
    contact, *_ = setup
    assert_error(
        api.patch(url(contact), raw="{not json", key=world.keys["project"]), 400, "invalid_json"
    )


def test_a_deleted_unknown_or_foreign_contact_is_404(api, world):
    deleted = ContactFactory(project=world.project)
    api.delete(f"/contacts/{deleted.id}", key=world.keys["project"])
    foreign = ContactFactory(project=world.other_project)
    for path in (url(deleted), url(foreign), f"/contacts/{uuid.uuid4()}/preferences"):
        assert_error(api.get(path, key=world.keys["project"]), 404, "not_found")
        patch = api.patch(path, {"unsubscribed_all": True}, key=world.keys["project"])
        assert_error(patch, 404, "not_found")
    assert not Suppression.objects.exists()
    assert_error(api.get("/contacts/nope/preferences", key=world.keys["project"]), 404, "not_found")


@pytest.mark.parametrize(
    ("persona", "can_read", "can_write"),
    [
        ("project", True, True),
        ("team", True, True),
        ("personal_member", True, True),
        ("personal_viewer", True, False),
        ("read_only", True, False),
        ("sending", False, False),
        ("other_project", False, False),
    ],
)
def test_permission_matrix(api, world, persona, can_read, can_write):
    contact = ContactFactory(project=world.project)
    topic = TopicFactory(project=world.project)
    key, project = world.keys[persona], world.project.id
    body = {"topics": [{"topic_id": str(topic.id), "subscribed": True}]}

    read = api.get(url(contact), key=key, project=project)
    write = api.patch(url(contact), body, key=key, project=project)

    assert read.status_code == (200 if can_read else 403)
    assert write.status_code == (200 if can_write else 403)
    assert Subscription.objects.exists() == can_write
    assert_error(api.get(url(contact)), 401, "unauthenticated")


def test_other_methods_are_405(api, world):
    contact = ContactFactory(project=world.project)
    for method in ("post", "put", "delete"):
        response = getattr(api, method)(url(contact), {}, key=world.keys["project"])
        assert_error(response, 405, "method_not_allowed")
