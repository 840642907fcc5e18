"""The Segment-compatible endpoints through the API: every call, every error, the limits,
both ways to present the key, the mapping of CONTRACT section 18."""

import base64
import datetime as dt
import gzip
import json
import threading

import pytest
from django.db import connection

from contacts.audiences.models import Audience, AudienceMembership
from contacts.models import Contact
from events.models import Event, EventKey
from events.services.processing import events_process_batch
from tenancy.services import project_forget
from tests.conftest import Api
from tests.contacts.factories import ContactFactory
from tests.tracking.conftest import basic
from tracking.messages import event_name_map

pytestmark = pytest.mark.django_db


def error(response):
    body = response.json()
    assert set(body) == {"status", "error"}
    assert body["status"] == response.status_code
    return body["error"]


def paths(response):
    return {(issue["path"], issue["code"]) for issue in error(response)["issues"]}


def events(**filters):
    return list(Event.objects.filter(source="customer", **filters).order_by("created_at", "id"))


def test_a_track_is_an_event_with_its_mapped_name_payload_and_identity(segment, clock):
    response = segment(
        "/v1/track",
        {
            "userId": "user-1",
            "event": "Order Completed",
            "properties": {"total": 12.5, "email": "Ada@Example.com"},
            "messageId": "m-1",
            "context": {"ip": "1.2.3.4", "library": {"name": "x"}},
            "integrations": {"All": True},
            "_metadata": {"bundled": []},
        },
    )
    assert response.status_code == 200
    assert response.json() == {"success": True}
    (event,) = events()
    assert event.event == "order_completed"
    assert event.payload == {"total": 12.5, "email": "Ada@Example.com"}
    assert event.external_id == "user-1"
    assert event.email == "ada@example.com"  # properties.email, normalised
    assert event.idempotency_key == "m-1"
    assert event.occurred_at == clock.current  # no timestamp: receipt time


def test_context_traits_email_is_the_identity_before_properties_email(segment):
    segment(
        "/v1/track",
        {
            "userId": "u",
            "event": "x",
            "context": {"traits": {"email": "ctx@example.com"}},
            "properties": {"email": "prop@example.com"},
        },
    )
    assert events()[0].email == "ctx@example.com"


@pytest.mark.parametrize(
    ("segment_name", "native"),
    [
        ("Order Completed", "order_completed"),
        ("Checkout/Step 2", "checkout_step_2"),
        ("  Signed Up!  ", "signed_up"),
        ("order.completed", "order.completed"),
        ("Cart..Viewed", "cart.viewed"),
        ("ÜBER Click", "ber_click"),
        ("already_fine", "already_fine"),
        ("---", ""),
    ],
)
def test_segment_names_map_onto_the_name_rule(segment_name, native):
    assert event_name_map(segment_name) == native


@pytest.mark.parametrize(
    ("name", "code"),
    [("***", "invalid_event_name"), ("Sendrealm.Contact.Created", "reserved_event_name")],
)
def test_a_name_that_maps_to_nothing_or_to_a_system_name_is_400(segment, name, code):
    response = segment("/v1/track", {"userId": "u", "event": name})
    assert response.status_code == 400
    assert paths(response) == {("event", code)}
    assert not events()


def test_page_and_screen_are_events_with_name_and_properties(segment):
    segment("/v1/page", {"userId": "u", "name": "Pricing", "properties": {"path": "/p"}})
    segment("/v1/screen", {"userId": "u", "name": "Home", "properties": {}})
    page, screen = events()
    assert (page.event, page.payload) == ("page", {"name": "Pricing", "properties": {"path": "/p"}})
    assert (screen.event, screen.payload) == ("screen", {"name": "Home", "properties": {}})


def test_an_anonymous_message_is_kept_with_its_anonymous_id_and_processed(segment):
    response = segment(
        "/v1/track", {"anonymousId": "anon-7", "event": "Viewed", "properties": {"a": 1}}
    )
    assert response.status_code == 200
    (event,) = events()
    assert (event.email, event.external_id, event.contact_ref) == (None, None, None)
    assert event.payload == {"a": 1, "anonymousId": "anon-7"}
    events_process_batch()
    event.refresh_from_db()
    assert event.status == "processed"
    assert event.contact_id is None


def test_a_message_without_any_identity_is_400(segment):
    response = segment("/v1/track", {"event": "Viewed"})
    assert response.status_code == 400
    assert paths(response) == {("", "identity_required")}


def test_identify_upserts_the_contact_by_email_with_traits_as_fields(segment):
    response = segment(
        "/v1/identify",
        {
            "userId": "user-1",
            "traits": {"email": "Ada@Example.com", "plan": "pro", "age": 36},
            "messageId": "id-1",
        },
    )
    assert response.status_code == 200
    contact = Contact.objects.get()
    assert contact.email == "ada@example.com"
    assert contact.external_id == "user-1"
    assert contact.fields == {"plan": "pro", "age": 36}
    (event,) = events()
    assert event.event == "identify"
    assert event.payload == {"traits": {"email": "Ada@Example.com", "plan": "pro", "age": 36}}


def test_identify_finds_the_contact_by_user_id_first_and_gives_it_the_new_email(segment, world):
    ContactFactory(project=world.project, email="old@example.com", external_id="user-1")
    segment(
        "/v1/identify",
        {"userId": "user-1", "traits": {"email": "new@example.com", "plan": None, "x": 1}},
    )
    contact = Contact.objects.get()
    assert contact.email == "new@example.com"
    assert contact.fields == {"x": 1}


def test_identify_with_a_user_id_alone_makes_a_contact_known_by_it(segment):
    segment("/v1/identify", {"userId": "user-9", "traits": {"plan": "free"}})
    contact = Contact.objects.get()
    assert (contact.email, contact.external_id, contact.fields) == (
        None,
        "user-9",
        {"plan": "free"},
    )
    segment("/v1/identify", {"userId": "user-9", "traits": {"plan": "pro"}})
    assert Contact.objects.get().fields == {"plan": "pro"}


def test_an_anonymous_identify_changes_no_contact(segment):
    response = segment("/v1/identify", {"anonymousId": "a-1", "traits": {"plan": "free"}})
    assert response.status_code == 200
    assert not Contact.objects.exists()
    assert events()[0].payload == {"traits": {"plan": "free"}, "anonymousId": "a-1"}


def test_identify_is_deduplicated_by_message_id(segment, world):
    body = {"userId": "u", "traits": {"email": "a@example.com", "n": 1}, "messageId": "same"}
    segment("/v1/identify", body)
    contact = Contact.objects.get()
    # Changed since: the resend must not set `n` back.
    Contact.objects.filter(id=contact.id).update(fields={"n": 2})
    assert segment("/v1/identify", body).status_code == 200
    assert Contact.objects.get().fields == {"n": 2}
    assert len(events()) == 1
    assert EventKey.objects.filter(idempotency_key="same").count() == 1


def test_group_adds_the_contact_to_the_audience_named_by_group_id(segment, world):
    ContactFactory(project=world.project, email="a@example.com", external_id="u")
    body = {
        "userId": "u",
        "groupId": "Acme Inc",
        "traits": {"seats": 3, "paid": True, "since": "2024-01-02", "name": "Acme", "x": {}},
    }
    assert segment("/v1/group", body).status_code == 200
    audience = Audience.objects.get()
    assert audience.name == "Acme Inc"
    types = dict(audience.properties.values_list("key", "type"))
    assert types == {"seats": "number", "paid": "boolean", "since": "date", "name": "string"}
    membership = AudienceMembership.objects.get()
    assert membership.properties == {
        "seats": 3,
        "paid": True,
        "since": "2024-01-02",
        "name": "Acme",
    }
    # The same group again, another trait value: the same audience, merged properties.
    segment("/v1/group", {"userId": "u", "groupId": "acme inc", "traits": {"seats": 4}})
    assert Audience.objects.count() == 1
    membership.refresh_from_db()
    assert membership.properties["seats"] == 4


def test_a_group_trait_of_another_type_than_its_property_is_400_and_stores_nothing(segment, world):
    ContactFactory(project=world.project, email="a@example.com", external_id="u")
    segment("/v1/group", {"userId": "u", "groupId": "g", "traits": {"seats": 3}})
    response = segment(
        "/v1/group", {"userId": "u", "groupId": "g", "traits": {"seats": "many"}, "messageId": "m"}
    )
    assert response.status_code == 400
    assert paths(response) == {("traits.seats", "invalid_value")}
    assert len(events()) == 1  # the refused message left no event and no key
    assert not EventKey.objects.filter(idempotency_key="m").exists()


def test_group_without_a_group_id_is_400(segment):
    response = segment("/v1/group", {"userId": "u"})
    assert paths(response) == {("groupId", "required")}


def test_alias_gives_the_previous_contact_the_new_user_id(segment, world):
    ContactFactory(project=world.project, email="a@example.com", external_id="anon-1")
    assert segment("/v1/alias", {"previousId": "anon-1", "userId": "user-1"}).status_code == 200
    assert Contact.objects.get().external_id == "user-1"
    (event,) = events()
    assert event.payload == {"previousId": "anon-1", "userId": "user-1"}
    assert event.external_id is None  # it names two users: kept without identity


def test_alias_changes_nothing_when_the_user_id_is_taken(segment, world):
    ContactFactory(project=world.project, email="a@example.com", external_id="anon-1")
    ContactFactory(project=world.project, email="b@example.com", external_id="user-1")
    assert segment("/v1/alias", {"previousId": "anon-1", "userId": "user-1"}).status_code == 200
    assert set(Contact.objects.values_list("email", "external_id")) == {
        ("a@example.com", "anon-1"),
        ("b@example.com", "user-1"),
    }


def test_alias_of_an_unknown_previous_id_changes_nothing(segment):
    assert segment("/v1/alias", {"previousId": "nobody", "userId": "user-1"}).status_code == 200
    assert not Contact.objects.exists()


def test_alias_needs_both_ids(segment):
    response = segment("/v1/alias", {"userId": "u"})
    assert paths(response) == {("previousId", "required")}


def test_a_batch_of_every_call_lands_once_and_a_resend_changes_nothing(segment):
    batch = {
        "batch": [
            {"type": "identify", "userId": "u", "traits": {"email": "a@x.io"}, "messageId": "1"},
            {"type": "track", "userId": "u", "event": "Bought", "messageId": "2"},
            {"type": "page", "userId": "u", "name": "Home", "messageId": "3"},
            {"type": "screen", "userId": "u", "name": "Main", "messageId": "4"},
            {"type": "group", "userId": "u", "groupId": "g", "messageId": "5"},
            {"type": "alias", "previousId": "u", "userId": "u2", "messageId": "6"},
        ],
        "writeKey": "ignored",
        "sentAt": "2026-01-01T12:00:00Z",
    }
    assert segment("/v1/batch", batch).status_code == 200
    assert segment("/v1/batch", batch).status_code == 200
    names = [event.event for event in sorted(events(), key=lambda e: e.idempotency_key)]
    assert names == ["identify", "bought", "page", "screen", "group", "alias"]
    contact = Contact.objects.get()
    assert (contact.email, contact.external_id) == ("a@x.io", "u2")
    assert AudienceMembership.objects.get().contact_id == contact.id


def test_a_batch_with_one_bad_message_is_refused_whole(segment):
    batch = {
        "batch": [
            {"type": "identify", "userId": "u", "traits": {"email": "a@x.io"}},
            {"type": "track", "userId": "u", "event": 5},
            {"type": "shout", "userId": "u"},
        ]
    }
    response = segment("/v1/batch", batch)
    assert response.status_code == 400
    assert paths(response) == {
        ("batch.1.event", "invalid_type"),
        ("batch.2.type", "invalid_choice"),
    }
    assert not events()
    assert not Contact.objects.exists()


def test_a_batch_whose_late_message_fails_in_its_change_rolls_back_the_earlier_ones(segment, world):
    ContactFactory(project=world.project, email="taken@x.io", external_id="other")
    ContactFactory(project=world.project, email="mine@x.io", external_id="u")
    batch = {
        "batch": [
            {"type": "track", "userId": "u", "event": "Bought", "messageId": "t"},
            {"type": "identify", "userId": "u", "traits": {"email": "taken@x.io"}},
        ]
    }
    response = segment("/v1/batch", batch)
    assert response.status_code == 409
    assert not events()
    assert Contact.objects.get(external_id="u").email == "mine@x.io"


@pytest.mark.django_db(transaction=True)
def test_events_alone_are_one_statement_and_contact_changes_a_transaction(world, monkeypatch):
    """A batch that changes no contact is the native batch's one statement, committed by
    itself; one with an identify stores its events and the change in one transaction."""
    import tracking.services

    ingest = tracking.services.event_ingest_batch
    in_transaction: list[bool] = []

    def watched(**kwargs):
        in_transaction.append(connection.in_atomic_block)
        return ingest(**kwargs)

    monkeypatch.setattr(tracking.services, "event_ingest_batch", watched)
    headers = basic(world.keys["project"])
    plain = {
        "batch": [
            {"type": "track", "userId": "u", "event": "Bought"},
            {"type": "page", "userId": "u"},
        ]
    }
    changing = {
        "batch": [
            {"type": "track", "userId": "u", "event": "Bought"},
            {"type": "identify", "userId": "u", "traits": {"email": "a@x.io"}},
        ]
    }
    for body in (plain, changing):
        assert Api().post("/v1/batch", body, headers=headers).status_code == 200
    assert (
        Api().post("/v1/track", {"userId": "u", "event": "Bought"}, headers=headers).status_code
        == 200
    )
    assert in_transaction == [False, True, False]
    assert Event.objects.filter(source="customer").count() == 5
    assert Contact.objects.get(external_id="u").email == "a@x.io"


@pytest.mark.parametrize(
    "body",
    [{}, {"batch": []}, {"batch": {}}, {"batch": [1]}, {"batch": [{}], "context": 3}, []],
)
def test_malformed_batches_are_400(segment, body):
    response = segment("/v1/batch", body)
    assert response.status_code == 400
    assert error(response)["code"] == "validation_error"


def test_bad_json_is_400_invalid_json(segment, api, world):
    response = segment("/v1/track", None, raw=b"{nope")
    assert response.status_code == 400
    assert error(response)["code"] == "invalid_json"


def test_a_message_over_32_kb_is_413(segment):
    big = {"userId": "u", "event": "x", "properties": {"blob": "a" * 33_000}}
    response = segment("/v1/track", big)
    assert response.status_code == 413
    assert error(response)["code"] == "request_too_large"
    response = segment("/v1/batch", {"batch": [{"type": "track", **big}]})
    assert response.status_code == 413
    assert paths(response) == {("batch.0", "too_large")}
    assert not events()


def test_a_batch_over_500_kb_is_413(segment):
    message = {"type": "track", "userId": "u", "event": "x", "properties": {"b": "a" * 30_000}}
    response = segment("/v1/batch", {"batch": [message] * 18})
    assert response.status_code == 413
    assert error(response)["code"] == "request_too_large"
    assert not events()


def test_a_batch_just_under_500_kb_is_accepted(segment):
    message = {"type": "track", "userId": "u", "event": "x", "properties": {"b": "a" * 30_000}}
    assert segment("/v1/batch", {"batch": [message] * 16}).status_code == 200
    assert len(events()) == 16


def test_timestamp_is_corrected_by_the_clients_clock_skew(segment, clock):
    # The device's clock is 10 minutes fast: its timestamp moves back by as much.
    segment(
        "/v1/track",
        {
            "userId": "u",
            "event": "x",
            "timestamp": "2026-01-01T11:55:00+00:00",
            "sentAt": "2026-01-01T12:10:00Z",
        },
    )
    assert events()[0].occurred_at == dt.datetime(2026, 1, 1, 11, 45, tzinfo=dt.UTC)


def test_a_batch_sent_at_applies_to_its_messages_and_a_timestamp_alone_is_kept(segment, clock):
    segment(
        "/v1/batch",
        {
            "batch": [
                {"type": "track", "userId": "u", "event": "a", "timestamp": "2026-01-01T11:00:00Z"}
            ],
            "sentAt": "2026-01-01T11:00:00Z",
        },
    )
    segment("/v1/track", {"userId": "u", "event": "b", "timestamp": "2025-06-01T00:00:00Z"})
    first, second = sorted(events(), key=lambda e: e.event)
    assert first.occurred_at == dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    assert second.occurred_at == dt.datetime(2025, 6, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("member", "value", "code"),
    [
        ("timestamp", "yesterday", "invalid_timestamp"),
        ("timestamp", "2026-01-01T00:00:00", "invalid_timestamp"),
        ("userId", {"a": 1}, "invalid_type"),
        ("messageId", "m" * 256, "invalid"),
        ("properties", [1], "invalid_type"),
        ("context", "x", "invalid_type"),
    ],
)
def test_bad_members_are_400_at_their_path(segment, member, value, code):
    response = segment("/v1/track", {"userId": "u", "event": "x", member: value})
    assert response.status_code == 400
    assert (member, code) in paths(response)


def test_an_invalid_email_is_400_at_where_it_came_from(segment):
    response = segment("/v1/identify", {"userId": "u", "traits": {"email": "nope"}})
    assert paths(response) == {("traits.email", "invalid_email")}


def test_numeric_ids_are_taken_as_text(segment):
    segment("/v1/track", {"userId": 42, "event": "x"})
    assert events()[0].external_id == "42"


def test_bearer_works_as_well_as_basic(api, world):
    response = api.post("/v1/track", {"userId": "u", "event": "x"}, key=world.keys["project"])
    assert response.status_code == 200


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Basic !!!",
        "Basic c3Jfbm9wZTo=",  # sr_nope:
        "Token abc",
    ],
)
def test_a_missing_or_unknown_key_is_401(api, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = api.post("/v1/track", {"userId": "u", "event": "x"}, headers=headers)
    assert response.status_code == 401
    assert error(response)["code"] == "unauthenticated"


def test_a_password_besides_the_write_key_is_401(api, world):
    token = base64.b64encode(f"{world.keys['project']}:secret".encode()).decode()
    response = api.post(
        "/v1/track", {"userId": "u", "event": "x"}, headers={"Authorization": f"Basic {token}"}
    )
    assert response.status_code == 401


def test_a_sending_key_may_write_and_a_read_only_key_is_403(segment):
    assert segment("/v1/track", {"userId": "u", "event": "x"}, key="sending").status_code == 200
    response = segment("/v1/batch", {"batch": [{"type": "track"}]}, key="read_only")
    assert response.status_code == 403
    assert error(response)["code"] == "forbidden"


def test_messages_land_in_the_write_keys_project(segment, world):
    segment("/v1/track", {"userId": "u", "event": "x"}, key="other_project")
    assert events()[0].project_id == world.other_project.id


def test_a_wrong_method_is_405_and_a_trailing_slash_is_404(api, world):
    headers = basic(world.keys["project"])
    assert api.get("/v1/track", headers=headers).status_code == 405
    assert api.post("/v1/track/", {"userId": "u", "event": "x"}, headers=headers).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_concurrent_resends_of_one_identify_change_the_contact_once(world):
    """Eight clients race to send one messageId, each with other traits: exactly one
    event, and the contact holds that event's traits, made once and never updated."""
    barrier = threading.Barrier(8)
    answers: list[int] = []
    headers = basic(world.keys["project"])

    def send(n: int) -> None:
        try:
            barrier.wait()
            body = {"userId": "u", "traits": {"email": "a@x.io", "n": n}, "messageId": "race"}
            answers.append(Api().post("/v1/identify", body, headers=headers).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * 8
    (event,) = events()
    contact = Contact.objects.get()
    assert contact.fields == {"n": event.payload["traits"]["n"]}
    system = Event.objects.filter(source="system").values_list("event", flat=True)
    assert list(system) == ["sendrealm.contact.created"]


def test_properties_over_the_projects_payload_bound_are_422_at_properties(segment, world):
    world.project.event_payload_limit_bytes = 64
    world.project.save(update_fields=["event_payload_limit_bytes"])
    project_forget(project=world.project)
    response = segment("/v1/track", {"userId": "u", "event": "x", "properties": {"b": "a" * 80}})
    assert response.status_code == 422
    assert error(response)["code"] == "payload_too_large"
    assert paths(response) == {("properties", "payload_too_large")}


def test_a_project_the_write_key_cannot_reach_is_403(segment, world):
    response = segment(
        "/v1/track",
        {"userId": "u", "event": "x"},
        headers={"X-Service-Project-Id": str(world.foreign_project.id)},
    )
    assert response.status_code == 403
    assert error(response)["code"] == "forbidden"


def test_a_team_key_writes_to_its_default_project_or_the_one_named(segment, world):
    segment("/v1/track", {"userId": "u", "event": "x"}, key="team")
    segment(
        "/v1/track",
        {"userId": "u", "event": "y"},
        key="team",
        headers={"X-Service-Project-Id": str(world.other_project.id)},
    )
    assert {(e.event, e.project_id) for e in events()} == {
        ("x", world.project.id),
        ("y", world.other_project.id),
    }


def test_a_personal_key_without_the_project_header_is_400(segment):
    response = segment("/v1/track", {"userId": "u", "event": "x"}, key="personal_owner")
    assert response.status_code == 400
    assert error(response)["code"] == "project_required"


def gzipped(body) -> bytes:
    return gzip.compress(json.dumps(body).encode())


def test_a_gzipped_batch_is_read_as_segments_clients_send_it(segment):
    body = {"batch": [{"type": "track", "userId": "u", "event": "Zipped"}]}
    response = segment("/v1/batch", None, raw=gzipped(body), headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200
    assert events()[0].event == "zipped"


def test_a_gzipped_body_that_inflates_past_the_limit_is_413(segment):
    body = {"batch": [{"type": "track", "userId": "u", "event": "x", "p": "a" * 600_000}]}
    raw = gzipped(body)
    assert len(raw) < 10_000
    response = segment("/v1/batch", None, raw=raw, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert error(response)["code"] == "request_too_large"


@pytest.mark.parametrize(
    ("raw", "encoding", "status", "code"),
    [
        (b"not gzip", "gzip", 400, "invalid_json"),
        (gzip.compress(b'{"batch": [', mtime=0)[:-8], "gzip", 400, "invalid_json"),
        (b"{}", "br", 415, "unsupported_media_type"),
    ],
    ids=["not-gzip", "truncated-gzip", "brotli"],
)
def test_bad_compressed_bodies_are_refused_in_the_envelope(segment, raw, encoding, status, code):
    response = segment("/v1/batch", None, raw=raw, headers={"Content-Encoding": encoding})
    assert response.status_code == status
    assert error(response)["code"] == code
