"""An interrupt inside a tool of a prebuilt ReAct agent (`create_react_agent`): the agent
pauses in its `tools` node and the human accepts the call, or edits its arguments.

LangGraph's "Add human-in-the-loop", section "Review tool calls"
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop): `book_hotel` calls
`interrupt(...)` and reads `response["type"]` ("accept" or "edit"); the agent is streamed
with "book a stay at McKittrick hotel", then with `Command(resume={"type": "accept"})`
(and, commented out in the docs, `{"type": "edit", "args": {"hotel_name": "McKittrick
Hotel"}}`).

Adapted: the model is a fake chat model that asks for `book_hotel` and then answers;
the edit is run on a second thread.
"""

from langgraph.prebuilt import create_react_agent
from langgraph.types import Command, interrupt

from tests.saver.corpus import calls, chat, config, paused, tool_call


def book_hotel(hotel_name: str):
    """Book a hotel"""
    response = interrupt(
        f"Trying to call `book_hotel` with args {{'hotel_name': {hotel_name}}}. "
        "Please approve or suggest edits."
    )
    if response["type"] == "accept":
        pass
    elif response["type"] == "edit":
        hotel_name = response["args"]["hotel_name"]
    else:
        raise ValueError(f"Unknown response type: {response['type']}")
    return f"Successfully booked a stay at {hotel_name}."


def run(checkpointer, pause):
    outputs = []
    for thread_id, resume in (
        ("accept", {"type": "accept"}),
        ("edit", {"type": "edit", "args": {"hotel_name": "McKittrick Hotel"}}),
    ):
        model = chat(
            calls(tool_call("book_hotel", {"hotel_name": "McKittrick hotel"}, "call_hotel")),
            "Your stay is booked.",
        )
        agent = create_react_agent(model=model, tools=[book_hotel], checkpointer=checkpointer)
        thread = config(thread_id)
        chunks = list(
            agent.stream(
                {"messages": [{"role": "user", "content": "book a stay at McKittrick hotel"}]},
                thread,
            )
        )
        paused(pause, thread_id, chunks)
        outputs.extend([chunks, agent.get_state(thread)])
        outputs.append(list(agent.stream(Command(resume=resume), thread)))
        outputs.append(agent.get_state(thread))
    return outputs
