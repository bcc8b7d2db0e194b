"""LangGraph's prebuilt `create_react_agent` with a custom state: tools read the agent's
state (`InjectedState`) and write it (`Command(update=...)` with a `ToolMessage`), the
config reaches a tool, and the conversation goes on over several turns of a thread.

LangGraph's "Add memory", sections "Read short-term memory in tools" (`CustomState` with
`user_id`, `get_user_info`) and "Write short-term memory from tools" (`CustomState` with
`user_name`, `update_user_info` returning a `Command`, `greet`, `config={"configurable":
{"user_id": "user_123"}}`) (docs.langchain.com/oss/python/langgraph/add-memory).

Adapted: the model is a fake chat model; the agent has both sets of tools and a
checkpointer; two turns on one thread, streamed (updates) and invoked.
"""

from typing import Annotated

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId
from langgraph.prebuilt import InjectedState, create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph.types import Command

from tests.saver.corpus import calls, chat, history, tool_call


class CustomState(AgentState):
    user_id: str
    user_name: str


def get_user_info(state: Annotated[CustomState, InjectedState]) -> str:
    """Look up user info."""
    user_id = state["user_id"]
    return "User is John Smith" if user_id == "user_123" else "Unknown user"


def update_user_info(
    tool_call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig
) -> Command:
    """Look up and update user info."""
    user_id = config["configurable"].get("user_id")
    name = "John Smith" if user_id == "user_123" else "Unknown user"
    return Command(
        update={
            "user_name": name,
            # update the message history
            "messages": [
                ToolMessage("Successfully looked up user information", tool_call_id=tool_call_id)
            ],
        }
    )


def greet(state: Annotated[CustomState, InjectedState]) -> str:
    """Use this to greet the user once you found their info."""
    user_name = state["user_name"]
    return f"Hello {user_name}!"


def run(checkpointer, pause):
    model = chat(
        calls(tool_call("get_user_info", {}, "call_info")),
        "The user is John Smith.",
        calls(tool_call("update_user_info", {}, "call_update")),
        calls(tool_call("greet", {}, "call_greet")),
        "I greeted John Smith.",
    )
    agent = create_react_agent(
        model=model,
        tools=[get_user_info, update_user_info, greet],
        state_schema=CustomState,
        checkpointer=checkpointer,
    )
    config = {"configurable": {"thread_id": "1", "user_id": "user_123"}}
    first = list(
        agent.stream(
            {"messages": "look up user information", "user_id": "user_123"},
            config,
            stream_mode="updates",
        )
    )
    second = agent.invoke({"messages": [{"role": "user", "content": "greet the user"}]}, config)
    return [first, second, agent.get_state(config), history(agent, config)]
