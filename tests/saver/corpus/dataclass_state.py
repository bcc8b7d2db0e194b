"""A dataclass as the state schema (with default values), and a dataclass runtime context:
nodes read attributes, the input may leave out the fields with defaults, and the state
read back from the checkpointer is the same.

LangGraph's "Graph API" overview, section "State" (`dataclass` when the state needs
default values) and section "Nodes" (`State`, a `Context` dataclass with `user_id`,
`plain_node`, `node_with_runtime` reading `runtime.context.user_id`, `node_with_config`
reading `config["configurable"]["thread_id"]`)
(docs.langchain.com/oss/python/langgraph/graph-api); the `MyState` dataclass of "Stream
outputs", "LLM tokens" (docs.langchain.com/oss/python/langgraph/streaming).

Adapted: the nodes of "Nodes" are chained and record their prints; the state is a
dataclass (with a list reducer and a default); one node asks for a review (`interrupt`)
whose payload and answer are dataclasses.
"""

import operator
from dataclasses import dataclass, field
from typing import Annotated

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from tests.saver.corpus import config, history, paused


@dataclass
class State:
    input: str
    results: str = ""
    log: Annotated[list[str], operator.add] = field(default_factory=list)


@dataclass
class Context:
    user_id: str


@dataclass
class Review:
    reviewer: str
    approved: bool


def run(checkpointer, pause):
    printed = []

    def plain_node(state: State):
        return {"log": [f"plain saw {state.input!r}"]}

    def node_with_runtime(state: State, runtime: Runtime[Context]):
        printed.append(f"In node:  {runtime.context.user_id}")
        review = interrupt(Review(reviewer=runtime.context.user_id, approved=False))
        return {"results": f"Hello, {state.input}!", "log": [f"reviewed: {review}"]}

    def node_with_config(state: State, config: RunnableConfig):
        printed.append(f"In node with thread_id:  {config['configurable']['thread_id']}")
        return {"results": state.results + f" Hello, {state.input}!"}

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("plain_node", plain_node)
    builder.add_node("node_with_runtime", node_with_runtime)
    builder.add_node("node_with_config", node_with_config)
    builder.add_edge(START, "plain_node")
    builder.add_edge("plain_node", "node_with_runtime")
    builder.add_edge("node_with_runtime", "node_with_config")
    builder.add_edge("node_with_config", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("dataclass")
    result = graph.invoke({"input": "world"}, thread, context=Context(user_id="user_1"))
    paused(pause, "dataclass", result)
    state = graph.get_state(thread)
    done = graph.invoke(
        Command(resume=Review(reviewer="ann", approved=True)),
        thread,
        context=Context(user_id="user_1"),
    )
    graph.update_state(thread, State(input="edited", results="by hand"))
    return [result, state, done, graph.get_state(thread), history(graph, thread), printed]
