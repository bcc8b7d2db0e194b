"""A node with a `RetryPolicy` that fails, then succeeds: LangGraph retries it within the
same run (only the failing branch; a node that ran beside it in the same step is not run
again), and the thread records one successful step.

LangGraph's "Use the graph API", section "Add retry policies" (`RetryPolicy()` passed to
`add_node(..., retry_policy=...)`, the exceptions it retries by default) and its
extended example "customizing retry policies" (`retry_policy=RetryPolicy(retry_on=
sqlite3.OperationalError)` for the node that queries a database,
`RetryPolicy(max_attempts=5)` for the model call)
(docs.langchain.com/oss/python/langgraph/use-graph-api).

Adapted: the database query fails with `sqlite3.OperationalError` on its first attempt,
the model call with a `ValueError` twice (retried by a policy that retries on it); the
policies wait no time between attempts (`initial_interval=0`, no jitter: the corpus has
no sleeps); the model is a fake chat model; both nodes run in one step, in parallel.
"""

import sqlite3

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import RetryPolicy

from tests.saver.corpus import chat, config, history


def run(checkpointer, pause):
    attempts = {"query_database": 0, "model": 0}
    model = chat("Hello! The database has 3 artists.")

    def query_database(state: MessagesState):
        attempts["query_database"] += 1
        if attempts["query_database"] < 2:
            raise sqlite3.OperationalError("database is locked")
        return {"messages": [AIMessage(content="SELECT * FROM Artist LIMIT 10; -> 3 rows")]}

    def call_model(state: MessagesState):
        attempts["model"] += 1
        if attempts["model"] < 3:
            raise ValueError("model overloaded")
        response = model.invoke(state["messages"])
        return {"messages": [response]}

    builder = StateGraph(MessagesState)
    builder.add_node(
        "query_database",
        query_database,
        retry_policy=RetryPolicy(
            retry_on=sqlite3.OperationalError, initial_interval=0, jitter=False
        ),
    )
    builder.add_node(
        "model",
        call_model,
        retry_policy=RetryPolicy(
            max_attempts=5, retry_on=ValueError, initial_interval=0, jitter=False
        ),
    )
    builder.add_edge(START, "model")
    builder.add_edge(START, "query_database")
    builder.add_edge("model", END)
    builder.add_edge("query_database", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("retry")
    result = graph.invoke({"messages": [("user", "How many artists?")]}, thread)
    return [result, attempts, graph.get_state(thread), history(graph, thread)]
