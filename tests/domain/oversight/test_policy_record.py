"""The oversight policy on record: recorded when it changes, once however many processes
start with it, and named by each decision made under it.

Given the settings that govern oversight as one JSON set, when a process records them,
then the first is `OversightPolicyRecorded` (version 1) and each change the whole set
again (`OversightPolicyChanged`, the next version), with its digest and operator; an
unchanged set records nothing. A decision made on a graph bound to a version names it
(`policy_version`), inside the event's hash; answers recorded before policies were read
with none and still verify.
"""

from __future__ import annotations

import json
import shutil
import threading
from typing import Any, TypedDict

import pytest

from domain.graph import END, START, StateGraph
from domain.oversight.policy_record import OVERSIGHT_POLICY_ID, OversightPolicy
from domain.oversight.policy_records import (
    PolicyVersion,
    policy_at,
    policy_digest,
    policy_in_force,
    record_policy,
)
from domain.record.chain import verify_chain
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
from integrity.verify_log import scan_log
from projections.catalog import runner_for
from projections.decision_register import DecisionRegister
from tests.fixtures.recorded_store import STORE

OPERATOR = {"id": "ops", "role": None, "authenticated": False, "via": "local"}
AGENT = {"id": "alice", "role": "agent", "authenticated": True, "via": "test"}
REVIEWERS = [
    {"id": name, "role": "reviewer", "authenticated": True, "via": "test"}
    for name in ("rita", "rob")
]
POLICY: dict[str, Any] = {
    "separation_of_duties": True,
    "rubber_stamp_seconds": 10.0,
    "retention_floor_days": 183,
    "roles": {},
    "graphs": {"refund": {"digest": "d1", "approvals": 1, "interrupt_deadline": None}},
}
LONGER_DEADLINE = {
    **POLICY,
    "graphs": {
        "refund": {
            "digest": "d1",
            "approvals": 1,
            "interrupt_deadline": {"seconds": 7200.0, "on_expiry": {"action": "reject"}},
        }
    },
}


def recorded(store) -> list[Any]:
    return list(store.events.get(OVERSIGHT_POLICY_ID))


def test_the_first_policy_is_recorded_with_its_digest_and_operator(store):
    in_force = record_policy(store, POLICY, OPERATOR)

    [first] = recorded(store)
    assert isinstance(first, OversightPolicy.OversightPolicyRecorded)
    assert (first.policy, first.actor) == (POLICY, OPERATOR)
    assert first.digest == policy_digest(POLICY) == in_force.digest
    assert first.digest.startswith("sha256:")
    assert len(first.digest) == len("sha256:") + 64
    assert in_force == PolicyVersion(1, first.digest, POLICY, recorded=True)


def test_an_unchanged_policy_records_nothing_and_gives_the_version_in_force(store):
    record_policy(store, POLICY, OPERATOR)

    again = record_policy(store, json.loads(json.dumps(POLICY)), {**OPERATOR, "id": "other"})

    assert len(recorded(store)) == 1
    assert (again.version, again.recorded) == (1, False)


def test_a_change_records_the_whole_set_as_the_next_version_and_the_old_one_stays(store):
    record_policy(store, POLICY, OPERATOR)

    changed = record_policy(store, LONGER_DEADLINE, OPERATOR)
    unchanged = record_policy(store, LONGER_DEADLINE, OPERATOR)

    first, second = recorded(store)
    assert isinstance(second, OversightPolicy.OversightPolicyChanged)
    assert (second.policy, second.digest) == (LONGER_DEADLINE, policy_digest(LONGER_DEADLINE))
    assert (changed.version, changed.recorded, unchanged.recorded) == (2, True, False)
    assert policy_in_force(store) == PolicyVersion(2, second.digest, LONGER_DEADLINE)
    assert policy_at(store, 1) == PolicyVersion(1, first.digest, POLICY)
    assert policy_at(store, 3) is None
    # And going back to the first settings is a change too: a third version
    assert record_policy(store, POLICY, OPERATOR).version == 3


def test_no_policy_on_record_in_a_new_store(store):
    assert policy_in_force(store) is None
    assert policy_at(store, 1) is None


class RacingStore:
    """A store on which another process records the same policy between this process's
    read and its save: the lost race, made to happen every time."""

    def __init__(self, store, other) -> None:
        self.store, self.other, self.raced = store, other, False
        self.events = store.events

    def save(self, *aggregates: Any) -> Any:
        if not self.raced:
            self.raced = True
            assert record_policy(self.other, POLICY, OPERATOR).recorded
        return self.store.save(*aggregates)


@pytest.fixture
def shared_url(store_kind, store_url_for):
    if store_kind == "memory":
        pytest.skip("two processes share a database, not a memory store")
    return store_url_for


def test_a_process_that_loses_the_race_takes_the_version_the_other_recorded(shared_url):
    # Given two processes on one database, the other recording between this one's read
    # and its save
    with open_store(shared_url) as mine, open_store(shared_url) as other:
        # When this one records the same policy
        in_force = record_policy(RacingStore(mine, other), POLICY, OPERATOR)

        # Then its save was refused by the store, it read again and found it recorded
        assert (in_force.version, in_force.recorded) == (1, False)
        assert len(recorded(mine)) == 1


def test_processes_starting_at_once_with_the_same_settings_record_once(shared_url):
    # Given four processes on one database, each with its own connection
    stores = [open_store(shared_url) for _ in range(4)]
    start = threading.Barrier(len(stores))
    found: list[PolicyVersion] = []

    def starting(store) -> None:
        start.wait()
        found.append(record_policy(store, POLICY, OPERATOR))

    # When they record the same policy at once
    workers = [threading.Thread(target=starting, args=(store,)) for store in stores]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    # Then it is on record once, and every one of them is under version 1
    assert len(recorded(stores[0])) == 1
    assert sorted(f.version for f in found) == [1, 1, 1, 1]
    assert sum(f.recorded for f in found) == 1
    for store in stores:
        store.close()


class Refund(TypedDict):
    amount: float
    approved: Any


def refund_graph(store):
    def ask(state: Refund) -> dict[str, Any]:
        return {"approved": interrupt({"amount": state["amount"]})}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=store, name="refund")


def answer(graph, thread_id: str, reviewer: dict[str, Any]) -> None:
    configurable = {"thread_id": thread_id, "actor": reviewer, "decision": "approve"}
    graph.invoke(Command(resume=True), {"configurable": configurable})


def decisions(store, thread_id: str) -> list[Any]:
    kinds = (WorkflowThread.InterruptResumed, WorkflowThread.InterruptApproved)
    return [e for e in store.thread_events(thread_id) if isinstance(e, kinds)]


def test_a_decision_names_the_policy_version_its_graph_is_under_inside_its_hash(store):
    # Given a graph needing two approvals, under version 4 of the policy on record
    graph = refund_graph(store)
    graph.set_oversight(approvals=2)
    graph.set_oversight(policy_version=4)
    graph.invoke(
        {"amount": 80.0, "approved": None}, {"configurable": {"thread_id": "t", "actor": AGENT}}
    )

    # When two reviewers approve
    for reviewer in REVIEWERS:
        answer(graph, "t", reviewer)

    # Then the approval and the answer both name version 4, and the chain verifies
    approval, resumed = decisions(store, "t")
    assert isinstance(approval, WorkflowThread.InterruptApproved)
    assert (approval.policy_version, resumed.policy_version) == (4, 4)
    assert verify_chain(store.thread_events("t"), "t").ok
    # And the version is covered by the hash: another number breaks it
    forged = store.thread_events("t")
    [answered] = [e for e in forged if isinstance(e, WorkflowThread.InterruptResumed)]
    object.__setattr__(answered, "policy_version", 5)
    assert not verify_chain(forged, "t").ok


def test_a_change_to_the_graphs_policy_leaves_no_version_until_one_is_recorded(store):
    # Given a graph bound to version 2, then given four eyes in Python, not on record
    graph = refund_graph(store)
    graph.set_oversight(policy_version=2)
    graph.set_oversight(approvals=1)
    graph.invoke(
        {"amount": 5.0, "approved": None}, {"configurable": {"thread_id": "u", "actor": AGENT}}
    )

    # When a reviewer answers
    answer(graph, "u", REVIEWERS[0])

    # Then the answer names no version: the record no longer says what was in force
    [resumed] = decisions(store, "u")
    assert resumed.policy_version is None
    assert graph.oversight.policy_version is None


def test_answers_recorded_before_policies_read_with_none_and_still_verify(tmp_path):
    # Given a store recorded before decisions named a policy version
    copy = tmp_path / STORE.name
    shutil.copyfile(STORE, copy)
    with open_store(f"sqlite:///{copy}") as store:
        notifications = store.recorder.select_notifications(start=1, limit=1_000_000)
        answers = [n for n in notifications if n.topic.endswith("WorkflowThread.InterruptResumed")]
        assert answers
        assert all(b"policy_version" not in n.state for n in answers)

        # When they are read, projected into the register and the log is verified
        events = [store.mapper.to_domain_event(n) for n in answers]
        runner = runner_for(store)
        runner.rebuild()
        rows = DecisionRegister(runner.db).decisions()
        runner.close()
        verdict = scan_log(store, jobs=1).verdict

    # Then each answer reads with no version, its register row shows none, and the log
    # verifies
    assert {e.policy_version for e in events} == {None}
    assert rows
    assert {row.policy_version for row in rows} == {None}
    assert verdict.problems == []
