"""LangChain's `create_agent` with `HumanInTheLoopMiddleware`: an `edit` decision replaces a
gated tool call's arguments before it runs (the tool's result then carries the
middleware's note that a reviewer replaced the call).

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
decision type "edit" (`{"type": "edit", "edited_action": {"name": ..., "args": ...}}`),
with the `write_file` tool of "Configuring interrupts" and the edit of "Read the
response schema" (`archive/orders_2024.csv`).

Adapted: the model is a fake chat model; the tools are local functions; the run is
streamed (updates) rather than invoked.
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, config, paused, tool_call


@tool
def write_file(path: str, content: str) -> str:
    """Write `content` to the file at `path`."""
    return f"Wrote {len(content)} characters to {path}"


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement."""
    return f"Executed: {query}"


def run(checkpointer, pause):
    agent = create_agent(
        model=chat(
            calls(
                tool_call(
                    "write_file",
                    {"path": "orders_archive.csv", "content": "id,total\n1,20\n"},
                    "call_write",
                )
            ),
            "Archived the orders.",
        ),
        tools=[write_file, execute_sql],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "write_file": True,
                    "execute_sql": {"allowed_decisions": ["approve", "reject"]},
                },
                description_prefix="Tool execution pending approval",
            ),
        ],
        checkpointer=checkpointer,
    )
    thread = config("edit")
    chunks = list(
        agent.stream(
            {"messages": [{"role": "user", "content": "Archive the 2024 orders"}]},
            thread,
            stream_mode="updates",
        )
    )
    paused(pause, "edit", chunks)
    decision = {
        "type": "edit",
        "edited_action": {
            "name": "write_file",
            "args": {"path": "archive/orders_2024.csv", "content": "id,total\n1,20\n"},
        },
    }
    resumed = list(
        agent.stream(Command(resume={"decisions": [decision]}), thread, stream_mode="updates")
    )
    return [chunks, resumed, agent.get_state(thread)]
