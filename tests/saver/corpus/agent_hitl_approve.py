"""LangChain's `create_agent` with `HumanInTheLoopMiddleware`: a gated tool call pauses the
agent (one interrupt listing the actions under review) and an `approve` decision runs it.

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
sections "Configuring interrupts" (`interrupt_on` for `write_file`, `execute_sql` and
`read_data`, `description_prefix="Tool execution pending approval"`), "Responding to
interrupts" ("Delete old records from the database", `version="v2"`, `result.interrupts`)
and decision type "approve" (`Command(resume={"decisions": [{"type": "approve"}]})`).

Adapted: the model is a fake chat model that asks for `execute_sql`, then answers; the
tools are local functions.
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, paused, tool_call

QUERY = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days';"


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
            calls(tool_call("execute_sql", {"query": QUERY}, "call_sql")),
            "Deleted the old records.",
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
    config = {"configurable": {"thread_id": "some_id"}}
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Delete old records from the database"}]},
        config=config,
        version="v2",
    )
    paused(pause, "some_id", result)
    state = agent.get_state(config)
    resumed = agent.invoke(
        Command(resume={"decisions": [{"type": "approve"}]}), config=config, version="v2"
    )
    return [result, result.interrupts, state, resumed, agent.get_state(config)]
