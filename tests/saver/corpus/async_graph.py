"""A graph run asynchronously: async nodes, `ainvoke`, `astream`, `aget_state`,
`aget_state_history` and `aupdate_state`, through an interrupt and its resume (the
checkpointer's async methods).

LangGraph's "Use the graph API", section "Async" (`async def node(state)` calling
`await llm.ainvoke(state["messages"])`, `graph.ainvoke`) and "Stream outputs" ("Sync" and
"Async" tabs: `async for chunk in graph.astream(inputs, stream_mode="updates")`)
(docs.langchain.com/oss/python/langgraph/use-graph-api, .../streaming); the review step is
the "Review and edit state" pattern of "Add human-in-the-loop".

Adapted: the model is a fake chat model; a review node asks for an edit of the model's
answer (`interrupt`) and is resumed asynchronously; the state is edited with
`aupdate_state` before the resume.
"""

import asyncio

from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from tests.saver.corpus import chat, config, paused


async def run_async(checkpointer, pause):
    llm = chat("A first draft.")

    async def node(state: MessagesState):
        new_message = await llm.ainvoke(state["messages"])
        return {"messages": [new_message]}

    async def review(state: MessagesState):
        edited = interrupt({"draft": state["messages"][-1].content})
        return {"messages": [("ai", edited)]}

    builder = StateGraph(MessagesState)
    builder.add_node("node", node)
    builder.add_node("review", review)
    builder.add_edge(START, "node")
    builder.add_edge("node", "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=checkpointer)

    thread = config("async")
    chunks = [
        chunk
        async for chunk in graph.astream(
            {"messages": [("user", "Write a draft")]}, thread, stream_mode="updates"
        )
    ]
    state = await graph.aget_state(thread)
    paused(pause, "async", state)
    await graph.aupdate_state(thread, {"messages": [("user", "Make it short.")]})
    edited_state = await graph.aget_state(thread)
    result = await graph.ainvoke(Command(resume="A short draft."), thread)
    past = [snapshot async for snapshot in graph.aget_state_history(thread)]
    return [chunks, state, edited_state, result, await graph.aget_state(thread), past]


def run(checkpointer, pause):
    return asyncio.run(run_async(checkpointer, pause))
