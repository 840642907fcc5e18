"""The catalog's `schema_hint` gives nested arrays their element types at every level."""

import json

import pytest

from events.shapes import Observation, merge_types, schema_hint
from tests.events.conftest import drain


def hint(*payloads):
    seen = Observation()
    for payload in payloads:
        seen.add(payload)
    return json.loads(schema_hint(merge_types({}, seen.types)))


@pytest.mark.django_db
def test_event_types_show_arrays_of_arrays_with_their_element_type(api, world):
    payload = {"matrix": [[1, 2], [3.5]], "route": [[[0, 1]]], "cells": [[{"sku": "a"}]]}
    api.post(
        "/events",
        {"event": "grid.saved", "email": "a@example.com", "payload": payload},
        key=world.keys["project"],
    )
    drain()

    response = api.get("/event-types", {"source": "customer"}, key=world.keys["project"])

    (entry,) = response.json()["data"]
    assert json.loads(entry["schema_hint"]) == {
        "matrix": "array<array<number>>",
        "route": "array<array<array<number>>>",
        "cells": "array<array<object>>",
        "cells[][].sku": "string",
    }


def test_nested_element_types_merge_level_by_level_across_events():
    types = hint({"m": [[1]]}, {"m": [["a"], []]}, {"m": [2]})

    assert types == {"m": "array<number|array<string|number>>"}


def test_an_inner_array_only_ever_empty_is_of_unknown_elements():
    assert hint({"m": [[]]}) == {"m": "array<array<unknown>>"}
