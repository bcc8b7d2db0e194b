"""Assistants as recorded configuration: each version a fact with who made it, the latest
chosen on record, deletion recorded; LangGraph's server's rules for config, context and
metadata. Every test runs on each store kind."""

from __future__ import annotations

import threading
import uuid

import pytest

from domain.assistants.assistant import Assistant, AssistantVersion, assistant_uuid
from domain.assistants.assistants import Assistants
from domain.errors import (
    AssistantExistsError,
    AssistantNotFoundError,
    AssistantVersionNotFoundError,
    InvalidAssistantError,
)

AGENT = {"id": "agent-1", "role": "agent"}
ADMIN = {"id": "ada", "role": "admin"}


@pytest.fixture
def assistants(store):
    return Assistants(store)


def kinds(store, assistant_id):
    return [type(e).__name__ for e in store.events.get(assistant_uuid(assistant_id))]


def test_an_assistant_is_recorded_at_version_one_with_who_made_it(store, assistants):
    made = assistants.create(
        graph_id="refund", actor=AGENT, context={"limit": 100}, metadata={"team": "ops"}
    )
    [created] = store.events.get(assistant_uuid(made.assistant_id))
    assert isinstance(created, Assistant.AssistantCreated)
    assert created.actor == AGENT
    current = assistants.get(made.assistant_id).current
    assert (current.version, current.graph_id, current.name) == (1, "refund", "Untitled")
    # LangGraph's server keeps context and config["configurable"] the same
    assert current.config == {"configurable": {"limit": 100}}
    assert current.context == {"limit": 100}


def test_configurable_given_becomes_the_context_and_both_at_once_are_refused(assistants):
    made = assistants.create(
        graph_id="refund", actor=AGENT, config={"configurable": {"a": 1}, "recursion_limit": 5}
    )
    assert made.current.context == {"a": 1}
    with pytest.raises(InvalidAssistantError, match="both configurable and context"):
        assistants.create(
            graph_id="refund", actor=AGENT, config={"configurable": {"a": 1}}, context={"b": 2}
        )


def test_an_update_records_a_whole_new_version_with_metadata_merged(store, assistants):
    made = assistants.create(
        graph_id="refund", actor=AGENT, name="strict", metadata={"team": "ops", "tier": 1}
    )
    updated = assistants.update(
        made.assistant_id, {"context": {"limit": 50}, "metadata": {"tier": 2}}, ADMIN
    )
    latest = updated.current
    assert latest.version == 2
    assert latest.metadata == {"team": "ops", "tier": 2}
    assert (latest.name, latest.context) == ("strict", {"limit": 50})
    assert updated.versions[1].context == {}  # the first version stands as it was
    events = list(store.events.get(assistant_uuid(made.assistant_id)))
    assert [type(e).__name__ for e in events] == ["AssistantCreated", "AssistantUpdated"]
    assert events[1].actor == ADMIN
    assert events[1].context == {"limit": 50}
    assert events[1].name == "strict"


def test_the_latest_version_is_chosen_on_record_and_an_unknown_one_is_refused(store, assistants):
    made = assistants.create(graph_id="refund", actor=AGENT)
    assistants.update(made.assistant_id, {"name": "second"}, AGENT)
    back = assistants.set_latest(made.assistant_id, 1, ADMIN)
    assert (back.current.version, back.current.name) == (1, "Untitled")
    assistants.set_latest(made.assistant_id, 1, ADMIN)  # already: nothing recorded
    with pytest.raises(AssistantVersionNotFoundError, match="versions 1, 2"):
        assistants.set_latest(made.assistant_id, 3, ADMIN)
    assert kinds(store, made.assistant_id) == [
        "AssistantCreated",
        "AssistantUpdated",
        "LatestVersionSelected",
    ]
    assert assistants.update(made.assistant_id, {}, AGENT).current.version == 3


def test_a_deleted_assistant_is_gone_but_its_id_stays_spent(store, assistants):
    made = assistants.create(graph_id="refund", actor=AGENT)
    assistants.delete(made.assistant_id, ADMIN)
    assert kinds(store, made.assistant_id)[-1] == "AssistantDeleted"
    with pytest.raises(AssistantNotFoundError):
        assistants.get(made.assistant_id)
    with pytest.raises(AssistantNotFoundError):
        assistants.update(made.assistant_id, {"name": "x"}, AGENT)
    with pytest.raises(AssistantExistsError):
        assistants.create(graph_id="refund", actor=AGENT, assistant_id=made.assistant_id)


def test_a_given_id_must_be_a_uuid_and_if_exists_decides_a_second_create(assistants):
    chosen = str(uuid.uuid4())
    first = assistants.create(graph_id="refund", actor=AGENT, assistant_id=chosen)
    again = assistants.create(
        graph_id="other", actor=ADMIN, assistant_id=chosen, if_exists="do_nothing"
    )
    assert again.current == first.current
    with pytest.raises(AssistantExistsError, match="already exists"):
        assistants.create(graph_id="refund", actor=AGENT, assistant_id=chosen)
    with pytest.raises(InvalidAssistantError, match="must be a UUID"):
        assistants.create(graph_id="refund", actor=AGENT, assistant_id="refund")


def test_a_served_graphs_assistant_is_taken_up_on_record_at_its_first_change(store, assistants):
    served_id = str(uuid.uuid5(uuid.NAMESPACE_URL, "served"))
    base = AssistantVersion(
        served_id, 1, "refund", {}, {}, {"created_by": "system"}, "refund", None, ""
    )
    changed = assistants.update(served_id, {"context": {"limit": 10}}, ADMIN, base=base)
    assert [v.context for v in changed.versions.values()] == [{}, {"limit": 10}]
    assert kinds(store, served_id) == ["AssistantCreated", "AssistantUpdated"]
    with pytest.raises(AssistantNotFoundError):
        assistants.update(str(uuid.uuid4()), {"name": "x"}, ADMIN)


def test_fields_that_are_not_an_assistants_are_refused_and_record_nothing(store, assistants):
    made = assistants.create(graph_id="refund", actor=AGENT)
    with pytest.raises(InvalidAssistantError, match="'version'"):
        assistants.update(made.assistant_id, {"version": 9}, AGENT)
    with pytest.raises(InvalidAssistantError, match="JSON object"):
        assistants.update(made.assistant_id, {"metadata": ["a"]}, AGENT)
    assert kinds(store, made.assistant_id) == ["AssistantCreated"]


def test_racing_creators_of_one_id_make_one_assistant(store, assistants):
    chosen, outcomes = str(uuid.uuid4()), []
    barrier = threading.Barrier(4)

    def create(who: str) -> None:
        barrier.wait()
        try:
            made = assistants.create(
                graph_id="refund", actor={"id": who}, assistant_id=chosen, name=who
            )
            outcomes.append(made.current.name)
        except AssistantExistsError:
            outcomes.append("exists")

    threads = [threading.Thread(target=create, args=(f"a{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes).count("exists") == 3
    assert kinds(store, chosen) == ["AssistantCreated"]
