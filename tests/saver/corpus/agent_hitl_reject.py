"""LangChain's `create_agent` with `HumanInTheLoopMiddleware`: a `reject` decision skips a
gated tool call; its message reaches the model as an error `ToolMessage`, and the agent
goes on.

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
decision type "reject" (`{"type": "reject", "message": "User rejected this action. Do not
retry this tool call."}`), on the `execute_sql` call of "Responding to interrupts".

Adapted: the model is a fake chat model; the tools are local functions; a second thread
rejects without a message (the middleware's default message).
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, config, paused, tool_call

QUERY = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days';"


@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement."""
    return f"Executed: {query}"


def run(checkpointer, pause):
    outputs = []
    for thread_id, decision in (
        (
            "with-message",
            {
                "type": "reject",
                "message": "User rejected this action. Do not retry this tool call.",
            },
        ),
        ("without-message", {"type": "reject"}),
    ):
        agent = create_agent(
            model=chat(
                calls(tool_call("execute_sql", {"query": QUERY}, "call_sql")),
                "Understood, I left the records alone.",
            ),
            tools=[execute_sql],
            middleware=[
                HumanInTheLoopMiddleware(
                    interrupt_on={"execute_sql": {"allowed_decisions": ["approve", "reject"]}},
                    description_prefix="Tool execution pending approval",
                ),
            ],
            checkpointer=checkpointer,
        )
        thread = config(thread_id)
        result = agent.invoke(
            {"messages": [{"role": "user", "content": "Delete old records from the database"}]},
            config=thread,
            version="v2",
        )
        paused(pause, thread_id, result)
        resumed = agent.invoke(
            Command(resume={"decisions": [decision]}), config=thread, version="v2"
        )
        outputs.extend([result, resumed, agent.get_state(thread)])
    return outputs
