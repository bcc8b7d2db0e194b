"""A run's `context=` reaches the nodes that take a `runtime`, as in LangGraph: given a
graph with a context schema, when it runs with a context, then what its nodes see."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest

from domain.checkpoint.memory import InMemorySaver
from domain.graph import END, START, StateGraph
from domain.runtime import Runtime, get_runtime
from domain.types import Command, interrupt


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    greeting: str
    answer: Any


def greet(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return {"greeting": f"Hello {runtime.context.user_id}"}


def a_graph(*nodes: Any) -> Any:
    builder = StateGraph(State, context_schema=Context)
    previous = START
    for node in nodes:
        builder.add_node(node.__name__, node)
        builder.add_edge(previous, node.__name__)
        previous = node.__name__
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=InMemorySaver())


def config(thread_id: str = "t-1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def test_a_node_taking_a_runtime_reads_the_runs_context():
    graph = a_graph(greet)

    assert graph.invoke({}, config(), context=Context("amy")) == {"greeting": "Hello amy"}


def test_a_node_may_take_the_config_and_the_runtime():
    def both(state: State, config: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
        return {"greeting": f"{config['configurable']['thread_id']} {runtime.context.user_id}"}

    graph = a_graph(both)

    assert graph.invoke({}, config(), context=Context("amy")) == {"greeting": "t-1 amy"}


def test_get_runtime_in_a_node_and_in_the_async_calls():
    def looked_up(state: State) -> dict[str, Any]:
        return {"greeting": get_runtime(Context).context.user_id}

    graph = a_graph(looked_up)

    assert asyncio.run(graph.ainvoke({}, config(), context=Context("ann"))) == {"greeting": "ann"}
    streamed = list(graph.stream({}, config("t-2"), context=Context("bo")))
    assert streamed == [{"looked_up": {"greeting": "bo"}}]


def test_the_context_is_the_runs_a_resume_gives_its_own():
    def ask(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"answer": f"{interrupt('ok?')} by {runtime.context.user_id}"}

    graph = a_graph(ask)
    graph.invoke({}, config(), context=Context("amy"))

    resumed = graph.invoke(Command(resume="yes"), config(), context=Context("rita"))

    assert resumed["answer"] == "yes by rita"


def test_without_a_context_the_runtime_has_none_and_no_store():
    def bare(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        return {"answer": [runtime.context, runtime.store, runtime.previous]}

    assert a_graph(bare).invoke({}, config())["answer"] == [None, None, None]


def test_get_runtime_outside_a_node_says_so():
    with pytest.raises(RuntimeError, match="outside a running graph node"):
        get_runtime()
