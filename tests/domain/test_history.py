"""Reading threads: get_state, get_state_history and update_state, as in LangGraph.

anchors/langgraph_semantics.md section 2 (StateSnapshot) and section 7
(history), ported from probes p1, p2, p4 and p5, on every store kind.
"""

from __future__ import annotations

import getpass
import operator
import re
from datetime import datetime
from itertools import pairwise
from typing import Annotated, Any, TypedDict

import pytest

from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command, Interrupt, PregelTask, StateSnapshot, interrupt
from tests.graphs import linear_graph

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
QUESTION = {"question": "Approve $250.0?"}


class State(TypedDict):
    refund_amount: float
    approved: bool
    log: Annotated[list, operator.add]


def request_approval(state: State) -> dict[str, Any]:
    decision = interrupt({"question": f"Approve ${state['refund_amount']}?"})
    return {"approved": decision, "log": ["request_approval"]}


def process_refund(state: State) -> dict[str, Any]:
    return {"approved": state["approved"], "log": [f"process_refund approved={state['approved']}"]}


def refund_graph(store: Workflows) -> CompiledStateGraph:
    """Seed (a) with a log: START -> request_approval -> process_refund -> END."""
    return linear_graph(store, State, request_approval, process_refund)


def config(thread_id: str = "h1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def paused(store: Workflows) -> CompiledStateGraph:
    graph = refund_graph(store)
    graph.invoke({"refund_amount": 250.0, "approved": False, "log": []}, config())
    return graph


def one_refund_cycle(store: Workflows) -> CompiledStateGraph:
    graph = paused(store)
    graph.invoke(Command(resume=True), config())
    return graph


def steps(snapshots: Any) -> list[int]:
    return [s.metadata["step"] for s in snapshots]


# -- get_state -----------------------------------------------------------------


def test_a_state_snapshot_has_langgraphs_eight_fields_in_order(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    assert isinstance(snapshot, StateSnapshot)
    assert snapshot._fields == (
        "values",
        "next",
        "config",
        "metadata",
        "created_at",
        "parent_config",
        "tasks",
        "interrupts",
    )
    assert PregelTask._fields == ("id", "name", "path", "error", "interrupts", "state", "result")


def test_a_paused_threads_snapshot_shows_values_next_task_and_interrupt(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    assert snapshot.values == {"refund_amount": 250.0, "approved": False, "log": []}
    assert snapshot.next == ("request_approval",)
    [task] = snapshot.tasks
    assert task.name == "request_approval"
    assert task.path == ("__pregel_pull", "request_approval")
    assert task.error is None
    assert task.result is None
    [pending] = snapshot.interrupts
    assert pending.value == QUESTION
    assert task.interrupts == snapshot.interrupts


def test_a_snapshots_config_names_the_thread_and_its_checkpoint(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    configurable = snapshot.config["configurable"]
    assert configurable["thread_id"] == "h1"
    assert configurable["checkpoint_ns"] == ""
    assert UUID_RE.match(configurable["checkpoint_id"])


def test_a_snapshots_metadata_gives_source_and_step(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    assert snapshot.metadata == {"source": "loop", "step": 0, "parents": {}}
    assert datetime.fromisoformat(snapshot.created_at).tzinfo is not None


def test_a_snapshots_parent_config_is_the_checkpoint_before_it(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    [input_checkpoint] = graph.get_state_history(config(), filter={"source": "input"})
    assert snapshot.parent_config == input_checkpoint.config
    assert input_checkpoint.parent_config is None


def test_a_finished_threads_snapshot_has_nothing_next_and_no_tasks(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    assert snapshot.values == {
        "refund_amount": 250.0,
        "approved": True,
        "log": ["request_approval", "process_refund approved=True"],
    }
    assert snapshot.next == ()
    assert snapshot.tasks == ()
    assert snapshot.interrupts == ()
    assert snapshot.metadata == {"source": "loop", "step": 2, "parents": {}}


def test_the_state_of_an_unknown_thread_is_an_empty_snapshot_not_an_error(store):
    # Given
    graph = refund_graph(store)
    asked = {"configurable": {"thread_id": "nope"}}

    # When
    snapshot = graph.get_state(asked)

    # Then
    assert snapshot == StateSnapshot(
        values={},
        next=(),
        config=asked,
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def test_config_metadata_is_copied_into_checkpoint_metadata(store):
    # Given
    graph = refund_graph(store)

    # When
    graph.invoke(
        {"refund_amount": 3.0, "approved": False, "log": []},
        {"configurable": {"thread_id": "meta"}, "metadata": {"reviewer": "alice"}},
    )

    # Then
    snapshot = graph.get_state(config("meta"))
    assert snapshot.metadata["reviewer"] == "alice"
    assert snapshot.metadata["source"] == "loop"


# -- get_state_history ---------------------------------------------------------


def test_one_refund_cycle_gives_four_checkpoints_newest_first(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    history = list(graph.get_state_history(config()))

    # Then
    assert [(s.metadata["source"], s.metadata["step"]) for s in history] == [
        ("loop", 2),
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
    ]
    assert [s.next for s in history] == [
        (),
        ("process_refund",),
        ("request_approval",),
        ("__start__",),
    ]


def test_each_checkpoint_in_history_links_to_the_one_before(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    history = list(graph.get_state_history(config()))

    # Then
    for newer, older in pairwise(history):
        assert newer.parent_config == older.config
    assert history[-1].parent_config is None
    assert len({s.config["configurable"]["checkpoint_id"] for s in history}) == 4


def test_history_values_are_the_state_at_each_checkpoint(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    history = list(graph.get_state_history(config()))

    # Then
    assert [s.values for s in history] == [
        {
            "refund_amount": 250.0,
            "approved": True,
            "log": ["request_approval", "process_refund approved=True"],
        },
        {"refund_amount": 250.0, "approved": True, "log": ["request_approval"]},
        {"refund_amount": 250.0, "approved": False, "log": []},
        {"log": []},
    ]


def test_history_limit_gives_the_newest_checkpoints(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    limited = graph.get_state_history(config(), limit=2)

    # Then
    assert steps(limited) == [2, 1]


def test_history_before_gives_the_checkpoints_older_than_the_one_named(store):
    # Given
    graph = one_refund_cycle(store)
    history = list(graph.get_state_history(config()))

    # When
    older = graph.get_state_history(config(), before=history[1].config)

    # Then
    assert steps(older) == [0, -1]


def test_history_filter_matches_metadata(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    inputs = graph.get_state_history(config(), filter={"source": "input"})

    # Then
    assert steps(inputs) == [-1]


def test_history_of_an_unknown_thread_is_empty(store):
    # Given
    graph = refund_graph(store)

    # When
    history = list(graph.get_state_history(config("nope")))

    # Then
    assert history == []


def test_historical_tasks_show_the_results_they_wrote(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    history = list(graph.get_state_history(config()))

    # Then
    assert [[(t.name, t.result) for t in s.tasks] for s in history] == [
        [],
        [("process_refund", {"approved": True, "log": ["process_refund approved=True"]})],
        [("request_approval", {"approved": True, "log": ["request_approval"]})],
        [("__start__", {"refund_amount": 250.0, "approved": False, "log": []})],
    ]


def test_a_historical_task_keeps_the_interrupt_it_raised_after_it_was_answered(store):
    # Given
    graph = paused(store)
    raised = graph.get_state(config()).interrupts
    graph.invoke(Command(resume=True), config())

    # When
    [paused_checkpoint] = [
        s for s in graph.get_state_history(config()) if s.next == ("request_approval",)
    ]

    # Then
    assert paused_checkpoint.interrupts == raised
    assert paused_checkpoint.tasks[0].interrupts == raised
    assert [i.value for i in paused_checkpoint.interrupts] == [QUESTION]


def test_get_state_at_a_checkpoint_id_from_history_equals_that_history_entry(store):
    # Given
    graph = one_refund_cycle(store)
    history = list(graph.get_state_history(config()))

    # When
    replayed = [graph.get_state(entry.config) for entry in history]

    # Then
    assert replayed == history


def test_get_state_at_a_past_checkpoint_shows_the_state_then(store):
    # Given
    graph = one_refund_cycle(store)
    [then] = [s for s in graph.get_state_history(config()) if s.metadata["step"] == 0]

    # When
    snapshot = graph.get_state(then.config)

    # Then
    assert snapshot.values == {"refund_amount": 250.0, "approved": False, "log": []}
    assert snapshot.next == ("request_approval",)
    assert [i.value for i in snapshot.interrupts] == [QUESTION]


def test_history_reads_the_same_through_a_new_store_object(sqlite_url):
    # Given
    with open_store(sqlite_url) as store:
        live = list(one_refund_cycle(store).get_state_history(config()))

    # When
    with open_store(sqlite_url) as reopened:
        read_back = list(refund_graph(reopened).get_state_history(config()))

    # Then
    assert read_back == live


# -- update_state ---------------------------------------------------------------


def test_update_state_records_state_edited_with_actor_and_reason(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    graph.update_state(
        config(actor={"id": "alice", "role": "agent"}, reason="customer called back"),
        {"approved": False},
    )

    # Then
    edited = store.thread_events("h1")[-1]
    assert isinstance(edited, WorkflowThread.StateEdited)
    assert edited.values == {"approved": False}
    assert edited.as_node is None
    assert edited.actor["id"] == "alice"
    assert edited.actor["role"] == "agent"
    assert edited.reason == "customer called back"


def test_update_state_without_an_actor_records_the_os_user_unauthenticated(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    graph.update_state(config(), {"approved": False})

    # Then
    edited = store.thread_events("h1")[-1]
    assert isinstance(edited, WorkflowThread.StateEdited)
    assert edited.actor["id"] == getpass.getuser()
    assert edited.actor["authenticated"] is False
    assert edited.reason is None


def test_update_state_makes_an_update_checkpoint_one_step_on(store):
    # Given
    graph = one_refund_cycle(store)
    latest = graph.get_state(config())

    # When
    new_config = graph.update_state(config(), {"log": ["manual"]}, as_node="process_refund")

    # Then
    snapshot = graph.get_state(new_config)
    assert snapshot.config == new_config
    assert snapshot.metadata == {"source": "update", "step": 3, "parents": {}}
    assert snapshot.parent_config == latest.config
    assert snapshot.next == ()
    assert snapshot.values["log"] == [
        "request_approval",
        "process_refund approved=True",
        "manual",
    ]
    assert graph.get_state(config()) == snapshot


def test_update_state_returns_a_config_naming_the_new_checkpoint(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    new_config = graph.update_state(config(), {"approved": False})

    # Then
    assert set(new_config["configurable"]) == {"thread_id", "checkpoint_ns", "checkpoint_id"}
    assert new_config["configurable"]["thread_id"] == "h1"
    assert UUID_RE.match(new_config["configurable"]["checkpoint_id"])


def test_update_state_values_go_through_the_reducers(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    graph.update_state(config(), {"log": ["a"], "approved": False})

    # Then
    values = graph.get_state(config()).values
    assert values["log"][-1] == "a"
    assert len(values["log"]) == 3
    assert values["approved"] is False


def test_update_state_drops_keys_the_state_does_not_have(store):
    # Given
    graph = one_refund_cycle(store)
    before = graph.get_state(config()).values

    # When
    graph.update_state(config(), {"zzz": 1})

    # Then
    assert graph.get_state(config()).values == before
    edited = store.thread_events("h1")[-1]
    assert isinstance(edited, WorkflowThread.StateEdited)
    assert edited.values == {}


def test_update_state_appears_in_history(store):
    # Given
    graph = one_refund_cycle(store)

    # When
    graph.update_state(config(), {"approved": False})

    # Then
    history = list(graph.get_state_history(config()))
    assert [(s.metadata["source"], s.metadata["step"]) for s in history][:2] == [
        ("update", 3),
        ("loop", 2),
    ]
    assert steps(graph.get_state_history(config(), filter={"source": "update"})) == [3]


def test_an_answer_after_update_state_does_not_apply_to_the_changed_question(store):
    # Given a thread paused on "Approve $250.0?", then edited to 300
    graph = paused(store)
    graph.update_state(config(), {"refund_amount": 300.0})

    # When the answer given is the one to the question shown
    result = graph.invoke(Command(resume=True), config())

    # Then the node, asking about $300.0 now, asks anew instead of taking it
    assert result["approved"] is False
    assert [i.value for i in result["__interrupt__"]] == [{"question": "Approve $300.0?"}]
    events = store.thread_events("h1")
    raised = [e for e in events if isinstance(e, WorkflowThread.InterruptRaised)]
    assert raised[1].reasked == raised[0].interrupt_id


def test_an_edit_that_leaves_the_question_as_it_was_keeps_the_answer(store):
    # Given a thread paused on "Approve $250.0?", edited where the question does not look
    graph = paused(store)
    graph.update_state(config(), {"log": []})

    # When
    result = graph.invoke(Command(resume=True), config())

    # Then the question is the one answered, so the answer applies
    assert result == {
        "refund_amount": 250.0,
        "approved": True,
        "log": ["request_approval", "process_refund approved=True"],
    }


def test_update_state_on_a_paused_thread_keeps_the_node_next(store):
    # Given
    graph = paused(store)

    # When
    graph.update_state(config(), {"zzz": 1})

    # Then
    snapshot = graph.get_state(config())
    assert snapshot.next == ("request_approval",)
    assert snapshot.values == {"refund_amount": 250.0, "approved": False, "log": []}


@pytest.mark.parametrize("as_node", ["request_approval", "process_refund", None])
def test_update_state_as_a_known_node_is_accepted(store, as_node):
    # Given
    graph = one_refund_cycle(store)

    # When
    graph.update_state(config(), {"approved": False}, as_node=as_node)

    # Then
    edited = store.thread_events("h1")[-1]
    assert isinstance(edited, WorkflowThread.StateEdited)
    assert edited.as_node == as_node


def test_interrupt_values_in_snapshots_are_interrupt_objects(store):
    # Given
    graph = paused(store)

    # When
    snapshot = graph.get_state(config())

    # Then
    assert all(isinstance(i, Interrupt) for i in snapshot.interrupts)
