"""State values that JSON has no form for: datetimes (naive and aware), dates, times,
timedeltas, UUIDs, decimals, sets and frozensets, tuples, bytes, enums, dict keys that are
not strings, large integers, NaN-free floats; they come back from the checkpointer as the
same objects, in the state, in an interrupt's payload and in a resume value.

LangGraph's "Persistence", section "Serializer" (the checkpointers' `JsonPlusSerializer`
encodes LangChain and LangGraph primitives, datetimes, enums and more)
(docs.langchain.com/oss/python/langgraph/persistence), with the graph of "Add
human-in-the-loop", section "Review and edit state" (`human_editing` asks for an edit
with `interrupt` and stores `result["edited_text"]`)
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop).

Adapted: the state carries a value of each kind, the interrupt's payload and the resume
value carry them too.
"""

import datetime as dt
import enum
import operator
import uuid
from decimal import Decimal
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import config, history, paused


class Status(enum.Enum):
    DRAFT = "draft"
    FINAL = "final"


class State(TypedDict):
    llm_generated_summary: str
    when: dt.datetime
    local_when: dt.datetime
    day: dt.date
    at: dt.time
    took: dt.timedelta
    ref: uuid.UUID
    amount: Decimal
    tags: set[str]
    frozen: frozenset[int]
    pair: tuple[int, str]
    blob: bytes
    status: Status
    by_id: dict[Any, str]
    seen: Annotated[set[str], operator.or_]


def summarize(state: State):
    return {"llm_generated_summary": "A summary.", "seen": {"summarize"}}


def human_editing(state: State):
    result = interrupt(
        {
            "task": "Review the output from the LLM and make any necessary edits.",
            "llm_generated_summary": state["llm_generated_summary"],
            "ref": state["ref"],
            "due": state["day"] + dt.timedelta(days=3),
            "tags": state["tags"],
        }
    )
    return {
        "llm_generated_summary": result["edited_text"],
        "status": result["status"],
        "amount": state["amount"] + result["extra"],
        "tags": state["tags"] | result["tags"],
        "seen": {"human_editing"},
    }


def run(checkpointer, pause):
    graph_builder = StateGraph(State)
    graph_builder.add_node("summarize", summarize)
    graph_builder.add_node("human_editing", human_editing)
    graph_builder.add_edge(START, "summarize")
    graph_builder.add_edge("summarize", "human_editing")
    graph_builder.add_edge("human_editing", END)
    graph = graph_builder.compile(checkpointer=checkpointer)

    thread_config = config("rich")
    values = {
        "when": dt.datetime(2024, 1, 17, 9, 30, 15, 123456, tzinfo=dt.UTC),
        "local_when": dt.datetime(2024, 1, 17, 9, 30),
        "day": dt.date(2024, 1, 17),
        "at": dt.time(23, 59, 59),
        "took": dt.timedelta(days=1, seconds=30),
        "ref": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "amount": Decimal("250.10"),
        "tags": {"refund", "priority"},
        "frozen": frozenset({3, 1, 2}),
        "pair": (1, "one"),
        "blob": b"\x00\x01binary",
        "status": Status.DRAFT,
        "by_id": {1: "one", (2, 3): "pair"},
        "seen": {"input"},
    }
    result = graph.invoke(values, thread_config)
    paused(pause, "rich", result)
    state = graph.get_state(thread_config)
    edited = graph.invoke(
        Command(
            resume={
                "edited_text": "The edited text",
                "status": Status.FINAL,
                "extra": Decimal("0.90"),
                "tags": {"edited"},
            }
        ),
        config=thread_config,
    )
    kinds = {
        key: type(value).__name__ for key, value in graph.get_state(thread_config).values.items()
    }
    return [
        result,
        state,
        edited,
        kinds,
        graph.get_state(thread_config),
        history(graph, thread_config),
    ]
