"""Command(update=..., goto=..., resume=...): returned from nodes and given as input.

anchors/langgraph_semantics.md section 6, ported from probe p5.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

import pytest

from domain.errors import InvalidUpdateError
from domain.graph import END, START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt


class S(TypedDict):
    amount: float
    approved: bool
    trail: Annotated[list, operator.add]


def router(state: S) -> Command[Literal["approve", "deny"]]:
    verdict = interrupt({"q": "approve?"})
    return Command(
        update={"approved": verdict, "trail": ["router"]},
        goto="approve" if verdict else "deny",
    )


def approve(state: S) -> dict[str, Any]:
    return {"trail": ["approve"]}


def deny(state: S) -> dict[str, Any]:
    return {"trail": ["deny"]}


def routing_graph(store: Workflows) -> CompiledStateGraph:
    """No static edge leaves `router`: its Command's goto picks the next node."""
    builder = StateGraph(S)
    builder.add_node("router", router)
    builder.add_node("approve", approve)
    builder.add_node("deny", deny)
    builder.add_edge(START, "router")
    builder.add_edge("approve", END)
    builder.add_edge("deny", END)
    return builder.compile(checkpointer=store)


def config(thread_id: str = "cmd", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, **configurable}}


START_VALUES = {"amount": 1.0, "approved": False, "trail": []}


def paused(store: Workflows) -> CompiledStateGraph:
    graph = routing_graph(store)
    graph.invoke(dict(START_VALUES), config())
    return graph


def finished(store: Workflows) -> CompiledStateGraph:
    graph = paused(store)
    graph.invoke(Command(resume=True), config())
    return graph


def event_names(store: Workflows) -> list[str]:
    return [type(e).__name__ for e in store.thread_events("cmd")]


# -- returned from a node -----------------------------------------------------


def test_a_command_returned_from_a_node_applies_its_update_and_goes_where_it_says(store):
    # Given
    graph = paused(store)

    # When
    result = graph.invoke(Command(resume=False), config())

    # Then
    assert result == {"amount": 1.0, "approved": False, "trail": ["router", "deny"]}


def test_a_commands_goto_is_recorded_as_the_nodes_route(store):
    # Given
    graph = paused(store)

    # When
    graph.invoke(Command(resume=True), config())

    # Then
    [routed] = [
        e
        for e in store.thread_events("cmd")
        if isinstance(e, WorkflowThread.NodeCompleted) and e.node == "router"
    ]
    assert routed.update == {"approved": True, "trail": ["router"]}
    assert routed.routes == ["approve"]


def test_a_commands_goto_makes_the_same_checkpoints_as_langgraph(store):
    # Given
    graph = paused(store)

    # When
    graph.invoke(Command(resume=False), config())

    # Then
    history = graph.get_state_history(config())
    assert [(h.metadata["source"], h.metadata["step"], h.next) for h in history] == [
        ("loop", 2, ()),
        ("loop", 1, ("deny",)),
        ("loop", 0, ("router",)),
        ("input", -1, ("__start__",)),
    ]


def test_a_command_with_goto_to_an_unknown_node_is_an_invalid_update(store):
    # Given
    builder = StateGraph(S)
    builder.add_node("lost", lambda state: Command(goto="nowhere"))
    builder.add_edge(START, "lost")
    graph = builder.compile(checkpointer=store)

    # When / Then
    with pytest.raises(InvalidUpdateError, match="nowhere"):
        graph.invoke(dict(START_VALUES), config())


# -- as input ----------------------------------------------------------------


def test_resume_with_an_update_applies_the_update_and_resumes(store):
    # Given
    graph = paused(store)

    # When
    result = graph.invoke(Command(resume=True, update={"amount": 99.0}), config())

    # Then
    assert result == {"amount": 99.0, "approved": True, "trail": ["router", "approve"]}


def test_the_update_sent_with_a_resume_is_visible_to_the_resumed_node(store):
    # Given
    seen: list[float] = []

    def ask(state: S) -> dict[str, Any]:
        seen.append(state["amount"])
        return {"approved": interrupt("ok?")}

    builder = StateGraph(S)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=store)
    graph.invoke(dict(START_VALUES), config())

    # When
    graph.invoke(Command(resume=True, update={"amount": 42.0}), config())

    # Then
    assert seen == [1.0, 42.0]


def test_the_update_sent_with_a_resume_is_recorded_with_the_actor(store):
    # Given
    graph = paused(store)

    # When
    graph.invoke(
        Command(resume=True, update={"amount": 99.0}),
        config(actor={"id": "carol", "role": "reviewer"}, decision="edit", reason="fix amount"),
    )

    # Then
    events = store.thread_events("cmd")
    resumed = next(e for e in events if isinstance(e, WorkflowThread.InterruptResumed))
    edited = next(e for e in events if isinstance(e, WorkflowThread.StateEdited))
    assert resumed.decision == "edit"
    assert resumed.actor["id"] == "carol"
    assert edited.values == {"amount": 99.0}
    assert edited.actor["id"] == "carol"
    assert edited.reason == "fix amount"
    assert events.index(resumed) < events.index(edited)


def test_goto_as_input_on_a_finished_thread_runs_that_node(store):
    # Given
    graph = finished(store)

    # When
    result = graph.invoke(Command(goto="deny"), config())

    # Then
    assert result == {"amount": 1.0, "approved": True, "trail": ["router", "approve", "deny"]}
    assert graph.get_state(config()).values == result


def test_goto_as_input_records_a_new_run(store):
    # Given
    graph = finished(store)
    before = len(store.thread_events("cmd"))

    # When
    graph.invoke(Command(goto="deny"), config())

    # Then
    assert event_names(store)[before:] == [
        "InputReceived",
        "NodeCompleted",
        "NodeCompleted",
        "ThreadCompleted",
    ]


def test_an_update_alone_as_input_writes_it_as_a_new_checkpoint(store):
    # Given
    graph = finished(store)
    checkpoints = len(list(graph.get_state_history(config())))

    # When
    result = graph.invoke(Command(update={"amount": 5.0}), config())

    # Then
    assert result == {"amount": 5.0, "approved": True, "trail": ["router", "approve"]}
    assert graph.get_state(config()).values == result
    assert graph.get_state(config()).next == ()
    assert len(list(graph.get_state_history(config()))) > checkpoints


def test_an_update_alone_runs_no_node(store):
    # Given
    graph = finished(store)
    before = len(store.thread_events("cmd"))

    # When
    graph.invoke(Command(update={"amount": 5.0}), config())

    # Then
    new = store.thread_events("cmd")[before:]
    assert [e.node for e in new if isinstance(e, WorkflowThread.NodeCompleted)] == ["__start__"]


def test_an_update_as_input_drops_keys_the_state_does_not_have(store):
    # Given
    graph = finished(store)

    # When
    result = graph.invoke(Command(update={"amount": 5.0, "zzz": 1}), config())

    # Then
    assert "zzz" not in result


def test_goto_as_input_to_an_unknown_node_is_an_invalid_update(store):
    # Given
    graph = finished(store)
    before = len(store.thread_events("cmd"))

    # When / Then
    with pytest.raises(InvalidUpdateError, match="nowhere"):
        graph.invoke(Command(goto="nowhere"), config())
    assert len(store.thread_events("cmd")) == before


def test_an_empty_command_is_refused_and_records_nothing(store):
    # Given a thread paused at an interrupt
    builder = StateGraph(S)
    builder.add_node("router", router)
    builder.add_node("approve", approve)
    builder.add_node("deny", deny)
    builder.add_edge(START, "router")
    graph = builder.compile(checkpointer=store)
    config = {"configurable": {"thread_id": "empty"}}
    graph.invoke({"amount": 1.0, "approved": False, "trail": []}, config)
    before = [e.event_hash for e in store.thread_events("empty")]
    # When a Command that carries nothing is sent (or resume=None)
    for command in (Command(), Command(resume=None)):
        with pytest.raises(InvalidUpdateError, match="carries nothing"):
            graph.invoke(command, config)
    # Then nothing was recorded
    assert [e.event_hash for e in store.thread_events("empty")] == before
