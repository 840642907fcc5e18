"""Selectors other families (the engine, event processing) read automations through."""

import pytest
from jsonschema import Draft202012Validator

from automations.definition.validation import definition_schema
from automations.selectors import automation_list_triggered_by
from tests.automations.conftest import Automations
from tests.automations.factories import AutomationFactory, simple_definition

pytestmark = pytest.mark.django_db


def test_an_event_finds_the_active_automations_it_triggers(api, world):
    automations = Automations(api, world.keys["project"])
    live = automations.created(simple_definition("order.completed"))
    paused = automations.created(simple_definition("order.completed"))
    draft = automations.created(simple_definition("order.completed"))
    deleted = automations.created(simple_definition("order.completed"))
    other_event = automations.created(simple_definition("order.refunded"))
    for created in (live, paused, deleted, other_event):
        automations.post(created["id"], "/actions/publish", {})
    automations.post(paused["id"], "/actions/pause", {})
    automations.delete(deleted["id"])
    AutomationFactory(project=world.other_project, published=True)

    found = list(automation_list_triggered_by(project=world.project, event="order.completed"))

    assert [str(a.id) for a in found] == [live["id"]]
    assert found[0].current_published_version.definition == simple_definition()
    assert draft["status"] == "draft"


def test_the_published_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(definition_schema())
