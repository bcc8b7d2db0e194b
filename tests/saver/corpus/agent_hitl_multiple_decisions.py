"""LangChain's `create_agent` with `HumanInTheLoopMiddleware`, several tool calls in one
model turn: the gated ones are listed in one interrupt and take one decision each, in
order (approve, edit, reject), while an ungated call runs without review.

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
sections "Configuring interrupts" (`read_data: False`, a safe operation) and "Multiple
decisions" (`{"decisions": [{"type": "approve"}, {"type": "edit", ...}, {"type":
"reject", "message": "This action is not allowed"}]}`).

Adapted: the model is a fake chat model asking for four calls at once; the tools are
local functions; the history of the thread is part of the outputs.
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, config, history, paused, tool_call


@tool
def write_file(path: str, content: str) -> str:
    """Write `content` to the file at `path`."""
    return f"Wrote {len(content)} characters to {path}"


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement."""
    return f"Executed: {query}"


@tool
def read_data(source: str) -> str:
    """Read the data in `source`."""
    return f"3 rows from {source}"


def run(checkpointer, pause):
    agent = create_agent(
        model=chat(
            calls(
                tool_call("read_data", {"source": "orders"}, "call_read"),
                tool_call("write_file", {"path": "a.txt", "content": "a"}, "call_a"),
                tool_call("write_file", {"path": "b.txt", "content": "b"}, "call_b"),
                tool_call("execute_sql", {"query": "DROP TABLE orders;"}, "call_drop"),
            ),
            "Done, except dropping the table.",
        ),
        tools=[write_file, execute_sql, read_data],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "write_file": True,
                    "execute_sql": {"allowed_decisions": ["approve", "reject"]},
                    "read_data": False,
                },
                description_prefix="Tool execution pending approval",
            ),
        ],
        checkpointer=checkpointer,
    )
    thread = config("several")
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Tidy up the orders"}]},
        config=thread,
        version="v2",
    )
    paused(pause, "several", result)
    decisions = {
        "decisions": [
            {"type": "approve"},
            {
                "type": "edit",
                "edited_action": {"name": "write_file", "args": {"path": "b.txt", "content": "B"}},
            },
            {"type": "reject", "message": "This action is not allowed"},
        ]
    }
    resumed = agent.invoke(Command(resume=decisions), config=thread, version="v2")
    return [result, resumed, agent.get_state(thread), history(agent, thread)]
