"""Building graphs: edges, fan-out and fan-in, conditional edges, builder errors.

LangGraph's graph API (`StateGraph`) on Holdpoint.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest

from domain.errors import GraphDefinitionError, InvalidUpdateError
from domain.graph import END, START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from tests.graphs import Log, appender


def config(thread_id: str = "g1", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, **extra}


def events_of(store: Workflows, thread_id: str = "g1") -> list[WorkflowThread.Event]:
    return store.thread_events(thread_id)


# -- supersteps: fan-out and fan-in -------------------------------------------


def fan_graph(store: Workflows) -> CompiledStateGraph:
    builder = StateGraph(Log)
    for name in ("a", "b", "join"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge(["a", "b"], "join")
    builder.add_edge("join", END)
    return builder.compile(checkpointer=store)


def test_fanned_out_nodes_run_in_one_superstep_and_see_the_same_state(store):
    # Given
    graph = fan_graph(store)

    # When
    result = graph.invoke({"log": ["in"]}, config())

    # Then: neither a nor b sees the other's update
    assert result["seen"] == ["a saw ['in']", "b saw ['in']", "join saw ['in', 'a', 'b']"]


def test_updates_of_one_superstep_are_applied_together_with_the_reducer(store):
    # Given
    graph = fan_graph(store)

    # When
    result = graph.invoke({"log": ["in"]}, config())

    # Then
    assert result["log"] == ["in", "a", "b", "join"]


def test_fanned_out_nodes_record_the_same_step_and_join_runs_once(store):
    # Given
    graph = fan_graph(store)

    # When
    graph.invoke({"log": []}, config())

    # Then
    completed = [
        (e.step, e.node) for e in events_of(store) if isinstance(e, WorkflowThread.NodeCompleted)
    ]
    assert completed == [(0, "__start__"), (1, "a"), (1, "b"), (2, "join")]


def test_a_join_waits_for_a_branch_that_takes_more_steps(store):
    # Given: a -> join directly; b -> b2 -> join
    builder = StateGraph(Log)
    for name in ("a", "b", "b2", "join"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge("b", "b2")
    builder.add_edge(["a", "b2"], "join")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["a", "b", "b2", "join"]


def test_a_node_reached_by_two_plain_edges_in_one_step_runs_once(store):
    # Given
    builder = StateGraph(Log)
    for name in ("a", "b", "c"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", "c")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["a", "b", "c"]


# -- conditional edges, entry points, sequences ---------------------------------


def test_a_conditional_edge_without_a_path_map_goes_to_the_node_it_names(store):
    # Given
    builder = StateGraph(Log)
    for name in ("check", "big", "small"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "check")
    builder.add_conditional_edges("check", lambda s: "big" if "large" in s["log"] else "small")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": ["large"]}, config())

    # Then
    assert result["log"] == ["large", "check", "big"]


def test_a_conditional_edge_with_a_path_map_goes_to_the_mapped_node(store):
    # Given
    builder = StateGraph(Log)
    for name in ("check", "big", "small"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "check")
    builder.add_conditional_edges(
        "check", lambda s: len(s["log"]) > 3, {True: "big", False: "small"}
    )
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": ["x"]}, config())

    # Then
    assert result["log"] == ["x", "check", "small"]


def test_a_conditional_edge_sees_the_update_of_its_own_node(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("mark", lambda s: {"last": "marked"})
    builder.add_node("yes", appender("yes"))
    builder.add_node("no", appender("no"))
    builder.add_edge(START, "mark")
    builder.add_conditional_edges("mark", lambda s: "yes" if s["last"] == "marked" else "no")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": [], "last": ""}, config())

    # Then
    assert result["log"] == ["yes"]


def test_a_conditional_edge_can_end_the_graph(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("only", appender("only"))
    builder.add_node("never", appender("never"))
    builder.add_edge(START, "only")
    builder.add_conditional_edges("only", lambda s: END, {END: END, "never": "never"})
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["only"]
    assert graph.get_state(config()).next == ()


def test_a_conditional_edge_returning_a_list_fans_out(store):
    # Given
    builder = StateGraph(Log)
    for name in ("split", "x", "y"):
        builder.add_node(name, appender(name))
    builder.add_edge(START, "split")
    builder.add_conditional_edges("split", lambda s: ["x", "y"])
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["split", "x", "y"]


def test_a_conditional_edge_result_missing_from_its_path_map_is_an_invalid_update(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("check", appender("check"))
    builder.add_node("big", appender("big"))
    builder.add_edge(START, "check")
    builder.add_conditional_edges("check", lambda s: "huge", {"big": "big"})
    graph = builder.compile(checkpointer=store)

    # When / Then
    with pytest.raises(InvalidUpdateError, match="huge"):
        graph.invoke({"log": []}, config())


def test_set_entry_point_starts_the_graph_at_that_node(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("first", appender("first"))
    builder.add_node("second", appender("second"))
    builder.set_entry_point("first")
    builder.add_edge("first", "second")
    builder.set_finish_point("second")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["first", "second"]


def test_add_sequence_chains_nodes_named_after_their_functions(store):
    # Given
    builder = StateGraph(Log)
    builder.add_sequence([appender("one"), appender("two"), appender("three")])
    builder.add_edge(START, "one")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["one", "two", "three"]
    assert list(builder.nodes) == ["one", "two", "three"]


def test_add_node_with_only_a_function_names_it_after_the_function(store):
    # Given
    def review(state: Log) -> dict[str, Any]:
        return {"log": ["reviewed"]}

    builder = StateGraph(Log)
    builder.add_node(review)
    builder.add_edge(START, "review")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["reviewed"]


def test_a_node_may_take_the_config_as_its_second_argument(store):
    # Given
    def who(state: Log, config: dict[str, Any]) -> dict[str, Any]:
        return {"last": config["configurable"]["thread_id"]}

    builder = StateGraph(Log)
    builder.add_node("who", who)
    builder.add_edge(START, "who")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config("t-42"))

    # Then
    assert result["last"] == "t-42"


def test_a_node_returning_none_changes_nothing(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("noop", lambda s: None)
    builder.add_edge(START, "noop")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": ["x"]}, config())

    # Then
    assert result == {"log": ["x"], "seen": []}


def test_a_node_returning_a_non_dict_is_an_invalid_update(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("bad", lambda s: 42)
    builder.add_edge(START, "bad")
    graph = builder.compile(checkpointer=store)

    # When / Then
    with pytest.raises(InvalidUpdateError):
        graph.invoke({"log": []}, config())


def test_a_dataclass_state_reaches_nodes_as_an_instance(store):
    # Given
    @dataclass
    class Ticket:
        title: str = ""
        notes: Annotated[list, operator.add] = field(default_factory=list)

    def note(state: Ticket) -> dict[str, Any]:
        return {"notes": [f"about {state.title}"]}

    builder = StateGraph(Ticket)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"title": "refund", "notes": []}, config())

    # Then
    assert result == {"title": "refund", "notes": ["about refund"]}


# -- builder errors ----------------------------------------------------------------


def test_an_edge_to_an_unknown_node_is_refused_at_compile():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.add_edge(START, "a")
    builder.add_edge("a", "ghost")

    # When / Then
    with pytest.raises(GraphDefinitionError, match="ghost"):
        builder.compile()


def test_an_edge_from_an_unknown_node_is_refused_at_compile():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.add_edge(START, "a")
    builder.add_edge("ghost", "a")

    # When / Then
    with pytest.raises(GraphDefinitionError, match="ghost"):
        builder.compile()


def test_a_waiting_edge_from_an_unknown_node_is_refused_at_compile():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.add_node("join", appender("join"))
    builder.add_edge(START, "a")
    builder.add_edge(["a", "ghost"], "join")

    # When / Then
    with pytest.raises(GraphDefinitionError, match="ghost"):
        builder.compile()


def test_a_path_map_naming_an_unknown_node_is_refused_at_compile():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "x", {"x": "ghost"})

    # When / Then
    with pytest.raises(GraphDefinitionError, match="ghost"):
        builder.compile()


def test_a_graph_without_an_entry_point_is_refused_at_compile():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))

    # When / Then
    with pytest.raises(GraphDefinitionError, match="entrypoint"):
        builder.compile()


def test_a_conditional_entry_point_counts_as_an_entry_point(store):
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.set_conditional_entry_point(lambda s: "a")
    graph = builder.compile(checkpointer=store)

    # When
    result = graph.invoke({"log": []}, config())

    # Then
    assert result["log"] == ["a"]


def test_adding_a_node_twice_is_refused():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))

    # When / Then
    with pytest.raises(GraphDefinitionError, match="already present"):
        builder.add_node("a", appender("a"))


@pytest.mark.parametrize("reserved", [START, END])
def test_start_and_end_are_reserved_node_names(reserved):
    # Given
    builder = StateGraph(Log)

    # When / Then
    with pytest.raises(GraphDefinitionError, match="reserved"):
        builder.add_node(reserved, appender("x"))


def test_a_checkpointer_that_is_not_a_holdpoint_store_is_refused():
    # Given
    builder = StateGraph(Log)
    builder.add_node("a", appender("a"))
    builder.add_edge(START, "a")

    # When / Then
    with pytest.raises(GraphDefinitionError, match="checkpointer"):
        builder.compile(checkpointer=object())


def test_a_state_schema_without_keys_is_refused():
    # Given
    class Empty(TypedDict):
        pass

    # When / Then
    with pytest.raises(GraphDefinitionError):
        StateGraph(Empty)
