"""A subgraph compiled with `checkpointer=True` keeps memory of its own across the parent's
runs (as an agent in a multi-agent system keeps its message history), and one compiled
without it starts afresh on each run; both inside a parent whose checkpointer is the one
under test.

LangGraph's "Add memory", section "Use in subgraphs" ("If you want the subgraph to have
its own memory, you can compile it with the appropriate checkpointer option ...
`subgraph_builder.compile(checkpointer=True)`")
(docs.langchain.com/oss/python/langgraph/add-memory) and "Use subgraphs", section "Add
persistence" (docs.langchain.com/oss/python/langgraph/use-subgraphs).

Adapted: the subgraph is a counter of its own invocations (`MessagesState` with one
message per run), used as the node of a parent that is invoked twice on one thread; the
parent's `get_state(subgraphs=True)` and history show each subgraph's state.
"""

from langgraph.graph import START, MessagesState, StateGraph

from tests.saver.corpus import config, history


def count(state: MessagesState):
    return {"messages": [("ai", f"I have seen {len(state['messages'])} messages")]}


def run(checkpointer, pause):
    outputs = []
    for name, own in (("own-memory", True), ("no-memory", None)):
        subgraph_builder = StateGraph(MessagesState)
        subgraph_builder.add_node(count)
        subgraph_builder.add_edge(START, "count")
        subgraph = subgraph_builder.compile(checkpointer=own)

        def call_agent(state: MessagesState, subgraph=subgraph):
            answer = subgraph.invoke({"messages": state["messages"][-1:]})
            return {"messages": answer["messages"][-1:]}

        builder = StateGraph(MessagesState)
        builder.add_node("agent", call_agent)
        builder.add_edge(START, "agent")
        graph = builder.compile(checkpointer=checkpointer)
        thread = config(name)
        for text in ("first", "second"):
            outputs.append(graph.invoke({"messages": [("user", text)]}, thread))
        outputs.extend([graph.get_state(thread, subgraphs=True), history(graph, thread)])
        outputs.append(
            [
                (saved.config["configurable"]["checkpoint_ns"], saved.checkpoint["channel_values"])
                for saved in checkpointer.list({"configurable": {"thread_id": name}})
            ]
        )
    return outputs
