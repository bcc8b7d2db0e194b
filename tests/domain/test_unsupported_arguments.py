"""The native engine refuses LangGraph's arguments it does not implement, by name: given a
graph, when an argument is set, then UnsupportedFeatureError naming it; never ignored."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from domain.checkpoint.memory import InMemorySaver
from domain.errors import UnsupportedFeatureError
from domain.graph import END, START, StateGraph


class State(TypedDict):
    n: int


class Other(TypedDict):
    m: int


def bump(state: State) -> dict[str, Any]:
    return {"n": state["n"] + 1}


def a_graph() -> Any:
    builder = StateGraph(State)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")
    builder.add_edge("bump", END)
    return builder.compile(checkpointer=InMemorySaver())


CONFIG = {"configurable": {"thread_id": "t-1"}}


@pytest.mark.parametrize(
    "arguments",
    [
        {"input_schema": Other},
        {"output_schema": Other},
        {"config_schema": Other},
    ],
    ids=lambda arguments: next(iter(arguments)),
)
def test_a_state_graph_with_a_schema_it_does_not_apply_is_refused(arguments):
    name = next(iter(arguments))

    with pytest.raises(UnsupportedFeatureError, match=rf"StateGraph\(\) with {name}=") as error:
        StateGraph(State, **arguments)

    assert "domain.graph" in str(error.value)


@pytest.mark.parametrize(
    "arguments",
    [
        {"defer": True},
        {"retry_policy": object()},
        {"cache_policy": object()},
        {"input_schema": Other},
    ],
    ids=lambda arguments: next(iter(arguments)),
)
def test_a_node_with_a_policy_it_does_not_follow_is_refused(arguments):
    builder = StateGraph(State)

    with pytest.raises(UnsupportedFeatureError, match=f"with {next(iter(arguments))}="):
        builder.add_node("bump", bump, **arguments)

    assert "bump" not in builder.nodes


def test_a_nodes_destinations_only_draw_its_edges_and_are_taken():
    builder = StateGraph(State)

    builder.add_node("bump", bump, destinations=("done",))

    assert "bump" in builder.nodes


@pytest.mark.parametrize(
    "arguments",
    [{"cache": object()}, {"store": object()}, {"debug": True}],
    ids=lambda arguments: next(iter(arguments)),
)
def test_compiling_with_a_cache_a_store_or_debug_is_refused(arguments):
    builder = StateGraph(State)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")

    with pytest.raises(
        UnsupportedFeatureError, match=f"compile\\(\\) with {next(iter(arguments))}="
    ):
        builder.compile(checkpointer=InMemorySaver(), **arguments)


RUN_ARGUMENTS = [
    {"durability": "exit"},
    {"durability": "async"},
    {"interrupt_before": ["bump"]},
    {"interrupt_after": ["bump"]},
    {"output_keys": ["n"]},
    {"print_mode": "values"},
]


@pytest.mark.parametrize("arguments", RUN_ARGUMENTS, ids=str)
def test_a_run_with_an_argument_it_does_not_implement_is_refused_and_records_nothing(arguments):
    graph = a_graph()
    name = next(iter(arguments))

    with pytest.raises(UnsupportedFeatureError, match=f"invoke\\(\\) with {name}="):
        graph.invoke({"n": 0}, CONFIG, **arguments)
    with pytest.raises(UnsupportedFeatureError, match=f"stream\\(\\) with {name}="):
        list(graph.stream({"n": 0}, CONFIG, **arguments))

    assert graph.checkpointer.thread("t-1") is None


@pytest.mark.parametrize(
    "arguments", [{"subgraphs": True}, {"debug": True}], ids=lambda arguments: next(iter(arguments))
)
def test_streaming_subgraphs_or_debug_is_refused(arguments):
    with pytest.raises(UnsupportedFeatureError, match=f"with {next(iter(arguments))}="):
        list(a_graph().stream({"n": 0}, CONFIG, **arguments))


def test_invoke_in_a_stream_mode_other_than_values_is_refused():
    with pytest.raises(UnsupportedFeatureError, match=r"invoke\(\) with stream_mode="):
        a_graph().invoke({"n": 0}, CONFIG, stream_mode="updates")


def test_the_async_calls_refuse_as_the_sync_ones_do():
    graph = a_graph()

    async def both() -> None:
        with pytest.raises(UnsupportedFeatureError, match=r"ainvoke\(\) with output_keys="):
            await graph.ainvoke({"n": 0}, CONFIG, output_keys=["n"])
        with pytest.raises(UnsupportedFeatureError, match=r"astream\(\) with subgraphs="):
            async for _ in graph.astream({"n": 0}, CONFIG, subgraphs=True):
                pass

    asyncio.run(both())


def test_state_of_subgraphs_is_refused():
    graph = a_graph()
    graph.invoke({"n": 0}, CONFIG)

    with pytest.raises(UnsupportedFeatureError, match=r"get_state\(\) with subgraphs="):
        graph.get_state(CONFIG, subgraphs=True)


def test_the_defaults_and_sync_durability_run_as_without_them():
    graph = a_graph()

    out = graph.invoke({"n": 0}, CONFIG, durability="sync", interrupt_before=None, context=None)

    assert out == {"n": 1}
    assert list(graph.stream({"n": 5}, {"configurable": {"thread_id": "t-2"}}, subgraphs=False))


def test_an_argument_langgraph_does_not_have_either_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'retries'"):
        a_graph().invoke({"n": 0}, CONFIG, retries=3)


@pytest.mark.parametrize("mode", ["messages", "custom", "debug", "checkpoints", "tasks"])
def test_a_langgraph_stream_mode_it_does_not_stream_is_refused_by_name(mode):
    with pytest.raises(UnsupportedFeatureError, match=f"stream\\(\\) with stream_mode='{mode}'"):
        list(a_graph().stream({"n": 0}, CONFIG, stream_mode=mode))


def test_a_stream_mode_langgraph_does_not_have_either_is_unknown():
    with pytest.raises(ValueError, match="Unknown stream_mode 'everything'"):
        list(a_graph().stream({"n": 0}, CONFIG, stream_mode="everything"))


def test_a_refusal_points_to_the_saver_that_runs_full_langgraph():
    with pytest.raises(UnsupportedFeatureError) as error:
        StateGraph(State, context_schema=dict, input_schema=State)

    assert "from langgraph.checkpoint.holdpoint import HoldpointSaver" in str(error.value)
