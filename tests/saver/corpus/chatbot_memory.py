"""A chatbot with tools that remembers a conversation per thread.

LangGraph's tutorial "Add memory" (docs.langchain.com/oss/python/langgraph/add-memory,
formerly "3. Add memory" of the Get started series): a `State` whose `messages` use the
`add_messages` reducer, a `chatbot` node calling a tool-calling model, LangGraph's
prebuilt `ToolNode` and `tools_condition`, compiled with a checkpointer. Two turns on
thread "1" (the second sees the first), one turn on thread "2" (a fresh conversation),
streamed with `stream_mode="values"`, then `get_state` and `get_state_history`.

Adapted: the model is a fake chat model that answers from a script, and the search tool
(Tavily) is a local function.
"""

from typing import Annotated

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from tests.saver.corpus import calls, chat, config, history, tool_call


class State(TypedDict):
    messages: Annotated[list, add_messages]


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"Results for {query!r}: LangGraph is a low-level orchestration framework."


def run(checkpointer, pause):
    llm = chat(
        AIMessage("Hello Will! It's nice to meet you.", id="ai-1"),
        calls(tool_call("search", {"query": "LangGraph"}, "call_1")),
        AIMessage("Of course, Will. LangGraph is an orchestration framework.", id="ai-3"),
        AIMessage("I don't have any previous context of your name.", id="ai-4"),
    )
    llm_with_tools = llm.bind_tools([search])

    def chatbot(state: State):
        return {"messages": [llm_with_tools.invoke(state["messages"])]}

    graph_builder = StateGraph(State)
    graph_builder.add_node("chatbot", chatbot)
    graph_builder.add_node("tools", ToolNode(tools=[search]))
    graph_builder.add_conditional_edges("chatbot", tools_condition)
    graph_builder.add_edge("tools", "chatbot")
    graph_builder.set_entry_point("chatbot")
    graph = graph_builder.compile(checkpointer=checkpointer)

    outputs = []
    one = config("1")
    for user_input in ("Hi there! My name is Will.", "Remember my name? What is LangGraph?"):
        events = graph.stream(
            {"messages": [{"role": "user", "content": user_input}]}, one, stream_mode="values"
        )
        outputs.append([event["messages"][-1] for event in events])
    events = graph.stream(
        {"messages": [{"role": "user", "content": "Remember my name?"}]},
        config("2"),
        stream_mode="values",
    )
    outputs.append(list(events))
    snapshot = graph.get_state(one)
    outputs.extend([snapshot, snapshot.next, history(graph, one), graph.get_state(config("2"))])
    return outputs
