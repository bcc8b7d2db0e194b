"""Streaming custom data with `get_stream_writer()`, from a node and from a tool, in
`stream_mode="custom"` and together with updates (`["updates", "custom"]`).

LangGraph's "Stream outputs", section "Stream custom data", tabs "node" (`writer(
{"custom_key": "Generating custom data inside node"})`) and "tool" (`query_database`
writing progress) (docs.langchain.com/oss/python/langgraph/streaming).

Adapted: the tool is called by LangGraph's prebuilt `ToolNode` after a node that asks
for it; both graphs are compiled with a checkpointer and run on threads; one node
writes, pauses at an interrupt, and writes again when resumed.
"""

from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from tests.saver.corpus import calls, config, paused, tool_call


class State(TypedDict):
    query: str
    answer: str


class Messages(TypedDict):
    messages: Annotated[list, add_messages]


def node(state: State):
    writer = get_stream_writer()
    writer({"custom_key": "Generating custom data inside node"})
    return {"answer": "some data"}


def checked(state: State):
    writer = get_stream_writer()
    writer({"progress": "asking"})
    approved = interrupt("Publish the answer?")
    writer({"progress": f"answered {approved}"})
    return {"answer": state["answer"] + (" (published)" if approved else "")}


@tool
def query_database(query: str) -> str:
    """Query the database."""
    writer = get_stream_writer()
    writer({"data": "Retrieved 0/100 records", "type": "progress"})
    # perform query
    writer({"data": "Retrieved 100/100 records", "type": "progress"})
    return "some-answer"


def ask(state: Messages):
    return {"messages": [calls(tool_call("query_database", {"query": "orders"}, "call_q"))]}


def run(checkpointer, pause):
    graph = (
        StateGraph(State)
        .add_node(node)
        .add_node(checked)
        .add_edge(START, "node")
        .add_edge("node", "checked")
        .compile(checkpointer=checkpointer)
    )
    inputs = {"query": "example"}
    thread = config("node")
    outputs = [list(graph.stream(inputs, thread, stream_mode="custom"))]
    paused(pause, "node", graph.get_state(thread))
    outputs.append(list(graph.stream(Command(resume=True), thread, stream_mode="custom")))
    thread = config("both")
    chunks = list(graph.stream(inputs, thread, stream_mode=["updates", "custom"]))
    paused(pause, "both", [chunk for mode, chunk in chunks if mode == "updates"])
    outputs.append(chunks)
    outputs.append(
        list(graph.stream(Command(resume=False), thread, stream_mode=["updates", "custom"]))
    )

    tools = (
        StateGraph(Messages)
        .add_node(ask)
        .add_node("tools", ToolNode([query_database]))
        .add_edge(START, "ask")
        .add_edge("ask", "tools")
        .compile(checkpointer=checkpointer)
    )
    outputs.append(
        list(
            tools.stream(
                {"messages": [("user", "How many orders?")]}, config("tool"), stream_mode="custom"
            )
        )
    )
    outputs.append(tools.get_state(config("tool")).values)
    return outputs
