"""Time-ordered keys (config/db/ids.py)."""

import datetime as dt
import time
import uuid

from config.db.ids import uuid7, uuid7_ranges, uuid7_span, uuid7_texts


def test_a_key_is_a_version_7_uuid_of_the_rfc_variant_with_the_current_millisecond():
    before = time.time_ns() // 1_000_000
    key = uuid7()
    after = time.time_ns() // 1_000_000

    assert key.version == 7
    assert key.variant == uuid.RFC_4122
    assert before <= key.int >> 80 <= after


def test_a_key_made_for_an_instant_carries_its_millisecond():
    instant = dt.datetime(2025, 3, 10, 12, 30, 5, 123456, tzinfo=dt.UTC)

    key = uuid7(at=instant)

    assert (key.version, key.variant) == (7, uuid.RFC_4122)
    start, end = uuid7_span(key)
    assert start == dt.datetime(2025, 3, 10, 12, 30, 5, 123000, tzinfo=dt.UTC)
    assert start <= instant < end == start + dt.timedelta(milliseconds=1)
    assert uuid7(at=instant + dt.timedelta(milliseconds=1)) > key


def test_a_version_4_key_carries_no_time():
    assert uuid7_span(uuid.uuid4()) is None


def test_keys_of_later_milliseconds_sort_after_earlier_ones_and_none_repeats():
    keys = []
    for _ in range(3):
        keys.append(uuid7())
        time.sleep(0.002)

    assert keys == sorted(keys)
    assert len({uuid7() for _ in range(10_000)}) == 10_000


def test_ingested_events_get_time_ordered_ids(api, world):
    key = world.keys["project"]
    first = api.post("/events", {"event": "signed_up", "email": "a@example.com"}, key=key).json()
    time.sleep(0.002)
    batch = api.post(
        "/events/batch",
        {"events": [{"event": "signed_up", "email": f"{n}@example.com"} for n in range(3)]},
        key=key,
    ).json()

    ids = [uuid.UUID(first["data"]["id"])] + [
        uuid.UUID(item["id"]) for item in batch["data"]["results"]
    ]
    assert all(key.version == 7 for key in ids)
    assert ids[0] < min(ids[1:])


def test_the_ranges_of_keys_hold_each_keys_millisecond_and_join_keys_less_than_a_day_apart():
    at = dt.datetime(2025, 1, 10, 8, tzinfo=dt.UTC)
    ms = dt.timedelta(milliseconds=1)
    near = [uuid7(at=at), uuid7(at=at + dt.timedelta(hours=23)), uuid7(at=at)]
    far = uuid7(at=at + dt.timedelta(days=40))

    ranges = uuid7_ranges([far, *near, uuid.uuid4()])

    assert ranges == [
        (at, at + dt.timedelta(hours=23) + ms),
        (at + dt.timedelta(days=40), at + dt.timedelta(days=40) + ms),
    ]
    assert uuid7_ranges([uuid.uuid4()]) == []


def test_keys_made_together_are_version_7_texts_of_the_current_millisecond_none_repeating():
    before = time.time_ns() // 1_000_000
    texts = uuid7_texts(500)
    after = time.time_ns() // 1_000_000

    keys = [uuid.UUID(text) for text in texts]
    assert [str(key) for key in keys] == texts
    assert all((key.version, key.variant) == (7, uuid.RFC_4122) for key in keys)
    assert all(before <= key.int >> 80 <= after for key in keys)
    assert len(set(texts)) == 500
    # Every bit but the time, version and variant varies from key to key.
    random_bits = ((1 << 76) - 1) ^ (0b11 << 62)
    varying = 0
    for key in keys[1:]:
        varying |= key.int ^ keys[0].int
    assert varying & random_bits == random_bits
    assert uuid7_texts(1)[0] != uuid7_texts(1)[0]
    assert uuid7_texts(0) == []
