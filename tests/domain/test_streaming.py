"""Streaming and async: stream/astream chunks and ainvoke with `async def` nodes.

Stream chunks are compared with what probe p1 printed for LangGraph.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from domain.errors import GraphDefinitionError
from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record.application import Workflows
from domain.types import Command, Interrupt, interrupt
from tests.graphs import Log, Refund, counter_loop_graph, refund_graph


def config(thread_id: str = "g1", **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, **extra}


# -- streaming (compare probe p1's printed stream output) ------------------------


QUESTION = {"question": "Approve a $10.0 refund?"}


def test_stream_updates_yields_the_interrupt_then_each_nodes_update(store):
    # Given
    graph = refund_graph(store)

    # When
    paused = list(
        graph.stream(
            {"refund_amount": 10.0, "approved": False}, config("t2"), stream_mode="updates"
        )
    )
    resumed = list(graph.stream(Command(resume="yes"), config("t2"), stream_mode="updates"))

    # Then: as p1 printed
    [chunk] = paused
    assert list(chunk) == ["__interrupt__"]
    assert isinstance(chunk["__interrupt__"], tuple)
    [pending] = chunk["__interrupt__"]
    assert pending == Interrupt(value=QUESTION, id=pending.id)
    assert resumed == [
        {"request_approval": {"approved": "yes"}},
        {"process_refund": {"approved": "yes"}},
    ]


def test_stream_values_yields_the_state_after_each_step_and_the_interrupt(store):
    # Given
    graph = refund_graph(store)

    # When
    paused = list(
        graph.stream({"refund_amount": 10.0, "approved": False}, config("t3"), stream_mode="values")
    )
    resumed = list(graph.stream(Command(resume="yes"), config("t3"), stream_mode="values"))

    # Then: as p1 printed
    pending = paused[1]["__interrupt__"]
    assert paused == [
        {"refund_amount": 10.0, "approved": False},
        {"refund_amount": 10.0, "approved": False, "__interrupt__": pending},
    ]
    assert isinstance(pending, tuple)
    assert [i.value for i in pending] == [QUESTION]
    assert resumed == [
        {"refund_amount": 10.0, "approved": False},
        {"refund_amount": 10.0, "approved": "yes"},
        {"refund_amount": 10.0, "approved": "yes"},
    ]


def test_stream_with_a_list_of_modes_yields_mode_and_chunk_pairs(store):
    # Given
    graph = refund_graph(store)
    graph.invoke({"refund_amount": 10.0, "approved": False}, config("t4"))

    # When
    chunks = list(
        graph.stream(Command(resume="yes"), config("t4"), stream_mode=["updates", "values"])
    )

    # Then
    assert chunks == [
        ("values", {"refund_amount": 10.0, "approved": False}),
        ("updates", {"request_approval": {"approved": "yes"}}),
        ("values", {"refund_amount": 10.0, "approved": "yes"}),
        ("updates", {"process_refund": {"approved": "yes"}}),
        ("values", {"refund_amount": 10.0, "approved": "yes"}),
    ]


def test_stream_with_an_unknown_mode_is_refused(store):
    # Given
    graph = refund_graph(store)

    # When / Then
    with pytest.raises(ValueError, match="stream_mode"):
        list(
            graph.stream(
                {"refund_amount": 1.0, "approved": False}, config(), stream_mode="everything"
            )
        )


# -- async ------------------------------------------------------------------------


def async_graph(store: Workflows) -> CompiledStateGraph:
    async def ask(state: Refund) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"approved": interrupt("ok?")}

    async def settle(state: Refund) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"refund_amount": state["refund_amount"] * 2}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_node("settle", settle)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "settle")
    return builder.compile(checkpointer=store)


def test_ainvoke_runs_async_nodes_and_pauses_and_resumes(store):
    # Given
    graph = async_graph(store)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        paused = await graph.ainvoke({"refund_amount": 5.0, "approved": False}, config())
        done = await graph.ainvoke(Command(resume=True), config())
        return paused, done

    # When
    paused, done = asyncio.run(scenario())

    # Then
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    assert done == {"refund_amount": 10.0, "approved": True}


def test_astream_yields_the_same_chunks_as_stream(store):
    # Given
    graph = async_graph(store)

    async def collect() -> list[Any]:
        chunks = [
            c
            async for c in graph.astream(
                {"refund_amount": 5.0, "approved": False}, config(), stream_mode="updates"
            )
        ]
        chunks += [
            c async for c in graph.astream(Command(resume=True), config(), stream_mode="updates")
        ]
        return chunks

    # When
    chunks = asyncio.run(collect())

    # Then
    assert list(chunks[0]) == ["__interrupt__"]
    assert chunks[1:] == [{"ask": {"approved": True}}, {"settle": {"refund_amount": 10.0}}]


def test_ainvoke_runs_plain_functions_too(store):
    # Given
    graph = counter_loop_graph(store)

    # When
    result = asyncio.run(graph.ainvoke({"n": 95}, config()))

    # Then
    assert result == {"n": 100}


def test_async_fanned_out_nodes_run_in_one_superstep(store):
    # Given
    async def left(state: Log) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["left"]}

    async def right(state: Log) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["right"]}

    builder = StateGraph(Log)
    builder.add_node("left", left)
    builder.add_node("right", right)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    graph = builder.compile(checkpointer=store)

    # When
    result = asyncio.run(graph.ainvoke({"log": []}, config()))

    # Then
    assert result["log"] == ["left", "right"]


def test_invoking_an_async_node_synchronously_is_a_graph_definition_error(store):
    # Given
    graph = async_graph(store)

    # When / Then
    with pytest.raises(GraphDefinitionError, match="ainvoke"):
        graph.invoke({"refund_amount": 5.0, "approved": False}, config())


def test_stream_without_a_mode_streams_updates_as_langgraphs_state_graph_does(store):
    graph = refund_graph(store)

    default = list(graph.stream({"refund_amount": 10.0, "approved": False}, config("t-default")))
    resumed = list(graph.stream(Command(resume="yes"), config("t-default")))

    assert [list(chunk) for chunk in default] == [["__interrupt__"]]
    assert resumed == [
        {"request_approval": {"approved": "yes"}},
        {"process_refund": {"approved": "yes"}},
    ]
