"""LangChain's `create_agent` with `HumanInTheLoopMiddleware`: a `respond` decision answers
in an "ask user" tool's place; the tool does not run, the model receives the human's
message as a successful tool result.

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
decision type "respond" (`{"type": "respond", "message": "Blue."}`).

Adapted: the model is a fake chat model that asks `ask_user` for a favourite colour; the
tool is a local placeholder; the run is streamed (values).
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, config, paused, tool_call


@tool
def ask_user(question: str) -> str:
    """Ask the user a question."""
    raise AssertionError("a human answers in this tool's place")


def run(checkpointer, pause):
    agent = create_agent(
        model=chat(
            calls(tool_call("ask_user", {"question": "Which colour?"}, "call_ask")),
            "Painting it blue.",
        ),
        tools=[ask_user],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"ask_user": {"allowed_decisions": ["respond"]}},
            ),
        ],
        checkpointer=checkpointer,
    )
    thread = config("respond")
    chunks = list(
        agent.stream(
            {"messages": [{"role": "user", "content": "Paint the fence"}]},
            thread,
            stream_mode="values",
        )
    )
    paused(pause, "respond", chunks)
    resumed = list(
        agent.stream(
            Command(resume={"decisions": [{"type": "respond", "message": "Blue."}]}),
            thread,
            stream_mode="values",
        )
    )
    return [chunks, agent.get_state(thread), resumed, agent.get_state(thread)]
