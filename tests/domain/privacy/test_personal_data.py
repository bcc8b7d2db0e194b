"""Personal values of a graph that declares them: sealed in the events, hashed sealed,
read back in plaintext while the subject's key is kept and as `[erased]` after.

On every store kind (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import pytest

from domain.errors import ErasureRefusedError, GraphDefinitionError, PersonalDataError
from domain.privacy.envelopes import ERASED, subject_ref
from domain.privacy.erasure import erase_subject, erasures, find_subject
from domain.privacy.personal import Personal
from domain.record.application import SNAPSHOT_INTERVAL
from domain.record.thread_uuids import thread_uuid
from domain.retention.retention import Retention
from tests.personal_threads import (
    ALICE,
    BOB,
    REVIEWER,
    config,
    decide,
    plaintexts,
    refund_builder,
    refund_graph,
    start,
)


def stored_states(store, thread_id):
    return [bytes(e.state) for e in store.recorder.select_events(thread_uuid(thread_id))]


def test_the_stored_events_never_hold_the_personal_values(store):
    # Given a graph that declares its customer's email and name personal
    graph = refund_graph(store)
    # When a refund is asked for and decided
    start(graph, "alice-1", ALICE)
    decide(graph, "alice-1")
    # Then no stored event holds any of them, nor the subject's id: envelopes stand there
    states = b"".join(stored_states(store, "alice-1"))
    assert not [value for value in plaintexts(ALICE) if value in states]
    assert states.count(b'"_personal_"') >= 5  # metadata, input, update, payload, ...
    assert subject_ref(ALICE["customer_id"]).encode() in states
    # And the thread reads as it was written, and its chain verifies over the envelopes
    values = graph.get_state(config("alice-1")).values
    assert (values["email"], values["name"]) == (ALICE["email"], ALICE["name"])
    assert values["outcome"] == f"Refund to {ALICE['name']} approved"
    assert store.thread("alice-1").metadata == {"customer_id": ALICE["customer_id"]}
    assert store.verify_chain("alice-1").ok


def test_a_graph_without_a_declaration_records_as_before(store):
    # Given the same graph with no personal declaration
    graph = refund_graph(store, personal=None)
    # When it runs
    start(graph, "plain-1", ALICE)
    # Then its events hold the values as they are
    states = b"".join(stored_states(store, "plain-1"))
    assert ALICE["email"].encode() in states
    assert b'"_personal_"' not in states


def test_after_erasure_the_values_read_as_erased_and_the_chain_still_verifies(store):
    # Given two subjects' threads, and the first subject's plaintext known to the log
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    decide(graph, "alice-1")
    start(graph, "alice-2", ALICE)
    start(graph, "bob-1", BOB)
    found = find_subject(store, ALICE["customer_id"])
    assert found.threads == ("alice-1", "alice-2")
    assert set(ALICE.values()) <= found.plaintexts
    # When the first subject is erased
    erased = erase_subject(store, found, REVIEWER, "Art. 17 request 88")
    # Then their values read as erased, in state and metadata, and each chain verifies
    values = graph.get_state(config("alice-1")).values
    assert (values["email"], values["name"]) == (ERASED, ERASED)
    assert values["amount"] == 150.0  # not personal: kept
    assert store.thread("alice-1").metadata == {"customer_id": ERASED}
    pending = store.thread("alice-2").interrupts
    assert [i["value"]["email"] for i in pending.values()] == [ERASED]
    assert all(store.verify_chain(t).ok for t in ("alice-1", "alice-2", "bob-1"))
    # And the other subject's thread is untouched
    assert graph.get_state(config("bob-1")).values["email"] == BOB["email"]
    # And the erasure is on record, naming the subject by reference only
    assert erased.key_destroyed
    (record,) = [e for e in erasures(store) if e["ref"] == found.ref]
    assert record["threads"] == ["alice-1", "alice-2"]
    assert record["erased_by"] == "rita"
    assert record["reason"] == "Art. 17 request 88"
    assert ALICE["customer_id"] not in str(erasures(store))


def test_an_erasure_under_a_legal_hold_is_refused_and_changes_nothing(store):
    # Given a subject's thread under a legal hold
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    Retention(store).place_hold("thread:alice-1", REVIEWER, "litigation 17")
    head = store.recorder.max_notification_id()
    # When the subject's erasure is asked for
    with pytest.raises(ErasureRefusedError, match="legal hold hold-1 covers thread 'alice-1'"):
        erase_subject(store, find_subject(store, ALICE["customer_id"]), REVIEWER, None)
    # Then nothing changed: the key is kept and nothing was recorded
    assert graph.get_state(config("alice-1")).values["email"] == ALICE["email"]
    assert store.recorder.max_notification_id() == head


def test_a_personal_value_whose_subject_is_not_known_is_refused(store):
    # Given a graph whose subject is its metadata's customer_id
    graph = refund_graph(store)
    # When a thread starts without one
    with pytest.raises(PersonalDataError, match=r"data subject \(metadata:customer_id\)"):
        graph.invoke({"email": "x@example.com", "name": "X", "amount": 1.0}, config("anon"))
    # Then nothing was recorded
    assert store.thread("anon") is None


def test_a_declaration_must_say_where_the_subject_is():
    with pytest.raises(GraphDefinitionError, match="'metadata:KEY' or 'state:KEY'"):
        Personal(subject="customer_id")
    with pytest.raises(GraphDefinitionError, match="a tuple of key names"):
        Personal(subject="state:customer", state="email")  # type: ignore[arg-type]


def test_an_edit_and_a_fork_record_the_values_sealed_and_are_erased_with_the_rest(store):
    # Given a finished refund of Alice's, whose email a human corrects
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    decide(graph, "alice-1")
    graph.update_state(config("alice-1"), {"email": "alice.corrected@example.com"})
    # When the thread is forked from its first checkpoint
    first = list(graph.get_state_history(config("alice-1")))[-1]
    checkpoint = first.config["configurable"]["checkpoint_id"]
    graph.invoke(None, config("alice-1", checkpoint_id=checkpoint, fork_thread_id="alice-fork"))
    # Then neither the edit nor the fork's events hold her values
    states = b"".join(s for t in ("alice-1", "alice-fork") for s in stored_states(store, t))
    assert b"alice.corrected" not in states
    assert not [value for value in plaintexts(ALICE) if value in states]
    assert graph.get_state(config("alice-1")).values["email"] == "alice.corrected@example.com"
    assert graph.get_state(config("alice-fork")).values["name"] == ALICE["name"]
    # And erasing her erases both threads, each chain still verifying
    found = find_subject(store, ALICE["customer_id"])
    assert found.threads == ("alice-1", "alice-fork")
    erase_subject(store, found, REVIEWER, None)
    assert graph.get_state(config("alice-1")).values["email"] == ERASED
    assert graph.get_state(config("alice-fork")).values["name"] == ERASED
    assert store.verify_chain("alice-1").ok
    assert store.verify_chain("alice-fork").ok


def test_a_subject_named_by_a_state_key_is_sealed_with_the_rest(store):
    # Given a graph whose data subject is named by its state's email
    personal = Personal(subject="state:email", state=("name",), payload=("email", "name"))
    graph = refund_graph(store, personal)
    # When a refund is asked for
    start(graph, "alice-1", ALICE)
    # Then the email, which names the subject, is sealed as the name is
    states = b"".join(stored_states(store, "alice-1"))
    assert ALICE["email"].encode() not in states
    assert ALICE["name"].encode() not in states
    assert subject_ref(ALICE["email"]).encode() in states
    # And erasing that subject erases both
    erase_subject(store, find_subject(store, ALICE["email"]), REVIEWER, None)
    values = graph.get_state(config("alice-1")).values
    assert (values["email"], values["name"]) == (ERASED, ERASED)


def test_a_thread_with_personal_data_takes_no_snapshot(store):
    # Given a refund of Alice's edited past the snapshot interval
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    for n in range(SNAPSHOT_INTERVAL):
        graph.update_state(config("alice-1"), {"name": f"{ALICE['name']} {n}"})
    assert store.thread("alice-1").version > SNAPSHOT_INTERVAL
    # Then no snapshot, which would hold her values in plaintext, was taken
    assert list(store.snapshots.get(thread_uuid("alice-1"))) == []
    # While a thread of a graph without personal data past the same interval has one
    plain = refund_builder().compile(checkpointer=store, name="plain-refund")
    start(plain, "plain-1", BOB)
    for n in range(SNAPSHOT_INTERVAL):
        plain.update_state(config("plain-1"), {"name": f"{BOB['name']} {n}"})
    assert list(store.snapshots.get(thread_uuid("plain-1"))) != []
