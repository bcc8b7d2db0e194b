"""Two prebuilt ReAct agents as nodes of a multi-agent graph, handing off to each other
with a tool that returns `Command(goto=agent_name, update=..., graph=Command.PARENT)`;
streamed with `subgraphs=True`. The hotel agent's booking tool pauses for approval, so
the interrupt is raised inside an agent subgraph entered by a handoff.

LangGraph's "Build custom multi-agent systems", section "Build a multi-agent system"
(`create_handoff_tool` with `InjectedState` and `InjectedToolCallId`,
`transfer_to_hotel_assistant`, `transfer_to_flight_assistant`, `book_hotel`,
`book_flight`, `flight_assistant` and `hotel_assistant` made with `create_react_agent(...,
name=...)`, `multi_agent_graph.stream(..., subgraphs=True)` with "book a flight from BOS
to JFK and a stay at McKittrick Hotel")
(docs.langchain.com/oss/python/langgraph/multi-agent-custom, formerly "Multi-agent").

Adapted: the models are fake chat models; the graph is compiled with a checkpointer;
`book_hotel` asks `interrupt` before booking (as in "Add human-in-the-loop", "Review
tool calls").
"""

from typing import Annotated

from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, create_react_agent
from langgraph.types import Command, interrupt

from tests.saver.corpus import calls, chat, config, paused, tool_call


def create_handoff_tool(*, agent_name: str, description: str | None = None):
    name = f"transfer_to_{agent_name}"
    description = description or f"Transfer to {agent_name}"

    @tool(name, description=description)
    def handoff_tool(
        state: Annotated[MessagesState, InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> Command:
        tool_message = {
            "role": "tool",
            "content": f"Successfully transferred to {agent_name}",
            "name": name,
            "tool_call_id": tool_call_id,
        }
        return Command(
            goto=agent_name,
            update={"messages": state["messages"] + [tool_message]},
            graph=Command.PARENT,
        )

    return handoff_tool


transfer_to_hotel_assistant = create_handoff_tool(
    agent_name="hotel_assistant",
    description="Transfer user to the hotel-booking assistant.",
)
transfer_to_flight_assistant = create_handoff_tool(
    agent_name="flight_assistant",
    description="Transfer user to the flight-booking assistant.",
)


def book_hotel(hotel_name: str):
    """Book a hotel"""
    approved = interrupt(f"Book a stay at {hotel_name}?")
    if not approved:
        return f"The stay at {hotel_name} was not approved."
    return f"Successfully booked a stay at {hotel_name}."


def book_flight(from_airport: str, to_airport: str):
    """Book a flight"""
    return f"Successfully booked a flight from {from_airport} to {to_airport}."


def run(checkpointer, pause):
    flight_assistant = create_react_agent(
        model=chat(
            calls(tool_call("book_flight", {"from_airport": "BOS", "to_airport": "JFK"}, "c1")),
            calls(tool_call("transfer_to_hotel_assistant", {}, "c2")),
        ),
        tools=[book_flight, transfer_to_hotel_assistant],
        prompt="You are a flight booking assistant",
        name="flight_assistant",
    )
    hotel_assistant = create_react_agent(
        model=chat(
            calls(tool_call("book_hotel", {"hotel_name": "McKittrick Hotel"}, "c3")),
            "Your flight and your stay at the McKittrick Hotel are booked.",
        ),
        tools=[book_hotel, transfer_to_flight_assistant],
        prompt="You are a hotel booking assistant",
        name="hotel_assistant",
    )
    multi_agent_graph = (
        StateGraph(MessagesState)
        .add_node(flight_assistant)
        .add_node(hotel_assistant)
        .add_edge(START, "flight_assistant")
        .compile(checkpointer=checkpointer)
    )
    thread = config("trip")
    chunks = list(
        multi_agent_graph.stream(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": "book a flight from BOS to JFK and a stay at McKittrick Hotel",
                    }
                ]
            },
            thread,
            subgraphs=True,
        )
    )
    paused(pause, "trip", chunks)
    state = multi_agent_graph.get_state(thread, subgraphs=True)
    resumed = list(multi_agent_graph.stream(Command(resume=True), thread, subgraphs=True))
    return [chunks, state, resumed, multi_agent_graph.get_state(thread)]
