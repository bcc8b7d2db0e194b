"""The published JSON Schemas of the events: given a store with an event of every class of
every aggregate, then each stored state validates against its topic's schema; a state
that breaks its schema is caught; the catalogue in the repository is what the code
makes, and the server publishes it without a key."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from integrity.event_schemas import PUBLISHED, catalogue
from tests.api.http_harness import running_server
from tests.damaged_store import TOPICS, record_every_kind


def stored_states(store):
    for notification in store.recorder.select_notifications(start=1, limit=1_000_000):
        yield notification.topic, json.loads(notification.state)


def test_every_event_of_every_kind_validates_against_its_schema(store):
    record_every_kind(store)
    schemas = catalogue()["events"]
    Draft202012Validator.check_schema(catalogue())
    seen, broken = set(), []
    for topic, state in stored_states(store):
        seen.add(topic)
        errors = list(Draft202012Validator(schemas[topic]).iter_errors(state))
        broken += [(topic, error.message) for error in errors]
    assert broken == []
    assert seen == set(TOPICS) == set(schemas)


def test_a_state_that_breaks_its_schema_is_caught(store):
    record_every_kind(store)
    schemas = catalogue()["events"]
    topic, state = next((t, s) for t, s in stored_states(store) if t.endswith("KeyCreated"))
    validator = Draft202012Validator(schemas[topic])
    del state["role"]
    state["secret"] = "hp_..."
    messages = sorted(error.message for error in validator.iter_errors(state))
    assert any("'role' is a required property" in m for m in messages)
    assert any("'secret' was unexpected" in m for m in messages)


def test_the_published_catalogue_is_what_the_code_makes():
    published = json.loads(PUBLISHED.read_text())
    assert published == json.loads(json.dumps(catalogue())), (
        "docs/schemas/events.json is stale: run `python -m integrity.event_schemas`"
    )


def test_the_server_publishes_the_schemas_without_a_key(tmp_path):
    url = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    with running_server(url) as server, server.http() as anonymous:
        answer = anonymous.get("/schemas/events")
    assert answer.status_code == 200
    assert answer.json() == json.loads(PUBLISHED.read_text())
