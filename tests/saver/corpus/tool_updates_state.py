"""A tool that pauses for a human and then updates the graph's state by returning
`Command(update=...)` (keys of its own and a `ToolMessage`), in a chatbot with
`ToolNode`; afterwards the state is changed by hand with `update_state`.

LangGraph's tutorial "Customize state" (docs.langchain.com/oss/python/langgraph/
customize-state, formerly "5. Customize state" of the Get started series): `State` with
`name` and `birthday`, the `human_assistance` tool with `InjectedToolCallId`, resumed
with `Command(resume={"name": "LangGraph", "birthday": "Jan 17, 2024"})`, then
`graph.update_state(config, {"name": "LangGraph (library)"})`.

Adapted: the model is a fake chat model and the search tool (Tavily) a local function;
a second thread answers "yes" (the tool keeps the model's proposal).
"""

from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from tests.saver.corpus import calls, chat, config, history, paused, tool_call


class State(TypedDict):
    messages: Annotated[list, add_messages]
    name: str
    birthday: str


@tool
def human_assistance(
    name: str, birthday: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> str:
    """Request assistance from a human."""
    human_response = interrupt(
        {
            "question": "Is this correct?",
            "name": name,
            "birthday": birthday,
        },
    )
    if human_response.get("correct", "").lower().startswith("y"):
        verified_name = name
        verified_birthday = birthday
        response = "Correct"
    else:
        verified_name = human_response.get("name", name)
        verified_birthday = human_response.get("birthday", birthday)
        response = f"Made a correction: {human_response}"

    state_update = {
        "name": verified_name,
        "birthday": verified_birthday,
        "messages": [ToolMessage(response, tool_call_id=tool_call_id)],
    }
    return Command(update=state_update)


@tool
def search(query: str) -> str:
    """Search the web."""
    return "LangGraph Platform: Deploy at scale (June 27, 2024)."


def build(checkpointer):
    llm = chat(
        calls(tool_call("search", {"query": "LangGraph release date"}, "call_search")),
        calls(
            tool_call(
                "human_assistance",
                {"name": "Assistant", "birthday": "2023-01-01"},
                "call_human",
            )
        ),
        "LangGraph was initially released on January 17, 2024.",
    )
    tools = [search, human_assistance]
    llm_with_tools = llm.bind_tools(tools)

    def chatbot(state: State):
        message = llm_with_tools.invoke(state["messages"])
        assert len(message.tool_calls) <= 1
        return {"messages": [message]}

    graph_builder = StateGraph(State)
    graph_builder.add_node("chatbot", chatbot)
    graph_builder.add_node("tools", ToolNode(tools=tools))
    graph_builder.add_conditional_edges("chatbot", tools_condition)
    graph_builder.add_edge("tools", "chatbot")
    graph_builder.add_edge(START, "chatbot")
    return graph_builder.compile(checkpointer=checkpointer)


def run(checkpointer, pause):
    outputs = []
    for thread_id, answer in (
        ("1", {"name": "LangGraph", "birthday": "Jan 17, 2024"}),
        ("2", {"correct": "yes"}),
    ):
        graph = build(checkpointer)
        user_input = (
            "Can you look up when LangGraph was released? "
            "When you have the answer, use the human_assistance tool for review."
        )
        thread = config(thread_id)
        events = list(
            graph.stream(
                {"messages": [{"role": "user", "content": user_input}]},
                thread,
                stream_mode="values",
            )
        )
        paused(pause, thread_id, events)
        outputs.append([event["messages"][-1] for event in events if "messages" in event])
        events = list(graph.stream(Command(resume=answer), thread, stream_mode="values"))
        outputs.append([event["messages"][-1] for event in events if "messages" in event])
        snapshot = graph.get_state(thread)
        outputs.append({k: v for k, v in snapshot.values.items() if k in ("name", "birthday")})
        outputs.append(graph.update_state(thread, {"name": "LangGraph (library)"}))
        snapshot = graph.get_state(thread)
        outputs.append({k: v for k, v in snapshot.values.items() if k in ("name", "birthday")})
        outputs.extend([snapshot, history(graph, thread)])
    return outputs
