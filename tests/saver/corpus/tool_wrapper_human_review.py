"""A wrapper that adds human review to any tool, in the Agent Inbox format: the tool asks
`interrupt([request])[0]` and the human accepts, edits the arguments, or responds in the
tool's place.

LangGraph's "Add human-in-the-loop", section "Add interrupts to any tool"
(docs.langchain.com/oss/python/langgraph/add-human-in-the-loop): `add_human_in_the_loop`
wraps `book_hotel` with `create_tool(...)`, the request is a `HumanInterrupt`
(`langgraph.prebuilt.interrupt`); used by `create_react_agent`, streamed with "book a
stay at McKittrick hotel".

Adapted: the model is a fake chat model; the three responses the wrapper knows ("accept",
"edit", "response") are each given on a thread of their own, as a list
(`Command(resume=[...])`, as Agent Inbox sends them).
"""

from collections.abc import Callable

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as create_tool
from langgraph.prebuilt import create_react_agent
from langgraph.prebuilt.interrupt import HumanInterrupt, HumanInterruptConfig
from langgraph.types import Command, interrupt

from tests.saver.corpus import calls, chat, config, paused, tool_call


def add_human_in_the_loop(
    tool: Callable | BaseTool,
    *,
    interrupt_config: HumanInterruptConfig = None,
) -> BaseTool:
    """Wrap a tool to support human-in-the-loop review."""
    if not isinstance(tool, BaseTool):
        tool = create_tool(tool)

    if interrupt_config is None:
        interrupt_config = {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": True,
        }

    @create_tool(tool.name, description=tool.description, args_schema=tool.args_schema)
    def call_tool_with_interrupt(config: RunnableConfig, **tool_input):
        request: HumanInterrupt = {
            "action_request": {"action": tool.name, "args": tool_input},
            "config": interrupt_config,
            "description": "Please review the tool call",
        }
        response = interrupt([request])[0]
        # approve the tool call
        if response["type"] == "accept":
            tool_response = tool.invoke(tool_input, config)
        # update tool call args
        elif response["type"] == "edit":
            tool_input = response["args"]["args"]
            tool_response = tool.invoke(tool_input, config)
        # respond to the LLM with user feedback
        elif response["type"] == "response":
            user_feedback = response["args"]
            tool_response = user_feedback
        else:
            raise ValueError(f"Unsupported interrupt response type: {response['type']}")

        return tool_response

    return call_tool_with_interrupt


def book_hotel(hotel_name: str):
    """Book a hotel"""
    return f"Successfully booked a stay at {hotel_name}."


def run(checkpointer, pause):
    outputs = []
    for thread_id, response in (
        ("accept", {"type": "accept", "args": None}),
        (
            "edit",
            {"type": "edit", "args": {"action": "book_hotel", "args": {"hotel_name": "The Jane"}}},
        ),
        ("response", {"type": "response", "args": "Please book somewhere cheaper."}),
    ):
        model = chat(
            calls(tool_call("book_hotel", {"hotel_name": "McKittrick hotel"}, "call_1")),
            "Done.",
        )
        agent = create_react_agent(
            model=model, tools=[add_human_in_the_loop(book_hotel)], checkpointer=checkpointer
        )
        thread = config(thread_id)
        chunks = list(
            agent.stream(
                {"messages": [{"role": "user", "content": "book a stay at McKittrick hotel"}]},
                thread,
            )
        )
        paused(pause, thread_id, chunks)
        outputs.append(chunks)
        outputs.append(list(agent.stream(Command(resume=[response]), thread)))
        outputs.append(agent.get_state(thread).values)
    return outputs
