"""LangChain's `create_agent` with `HumanInTheLoopMiddleware(interrupt_mode="per_call")`:
each gated tool call raises its own interrupt (a `tool_approval` with a
`response_schema`), answered by interrupt id; all at once on one thread, one at a time on
another (an unanswered interrupt stays pending).

LangChain's "Human-in-the-loop" (docs.langchain.com/oss/python/langchain/human-in-the-loop),
sections "Pause once per tool call", "Read the interrupts" and "Resume each call by ID";
the middleware's own docstring example "Per-call: one interrupt per gated tool call"
(`answers[interrupt.id] = {"type": "reject", "message": "Keep the report."}` for
`delete_file`, approve for `send_email`).

Adapted: the model is a fake chat model; the tools are local functions; the interrupts
of a result are listed by tool name (they come in the order the parallel calls reach
them, which varies from run to run).
"""

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langgraph.types import Command

from tests.saver.corpus import calls, chat, config, paused, tool_call


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"Sent to {to}: {body}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"Deleted {path}"


def build(checkpointer):
    return create_agent(
        model=chat(
            calls(
                tool_call("send_email", {"to": "alice@example.com", "body": "Hi"}, "call_mail"),
                tool_call("delete_file", {"path": "report.pdf"}, "call_delete"),
            ),
            "Emailed Alice and kept the report.",
        ),
        tools=[send_email, delete_file],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "send_email": True,
                    "delete_file": {"allowed_decisions": ["approve", "reject"]},
                },
                interrupt_mode="per_call",
            )
        ],
        checkpointer=checkpointer,
    )


def shown(result):
    """A v2 result, its interrupts by tool name: the gated calls run in parallel, and
    their interrupts are reported in the order the calls reached them."""
    return result.value, sorted(result.interrupts, key=lambda i: i.value["name"])


def answer(interrupt):
    if interrupt.value["name"] == "delete_file":
        return {"type": "reject", "message": "Keep the report."}
    return {"type": "approve"}


def run(checkpointer, pause):
    request = {"messages": [{"role": "user", "content": "Email Alice, then delete the report."}]}
    outputs = []

    agent = build(checkpointer)
    thread = config("all-at-once")
    result = agent.invoke(request, thread, version="v2")
    paused(pause, "all-at-once", result)
    answers = {interrupt.id: answer(interrupt) for interrupt in result.interrupts}
    outputs.extend([shown(result), agent.invoke(Command(resume=answers), thread, version="v2")])
    outputs.append(agent.get_state(thread))

    agent = build(checkpointer)
    thread = config("one-at-a-time")
    result = agent.invoke(request, thread, version="v2")
    paused(pause, "one-at-a-time", result)
    mail = next(i for i in result.interrupts if i.value["name"] == "send_email")
    partly = agent.invoke(Command(resume={mail.id: answer(mail)}), thread, version="v2")
    paused(pause, "one-at-a-time", partly)
    outputs.extend([shown(result), partly, agent.get_state(thread)])
    rest = {interrupt.id: answer(interrupt) for interrupt in partly.interrupts}
    outputs.append(agent.invoke(Command(resume=rest), thread, version="v2"))
    outputs.append(agent.get_state(thread))
    return outputs
