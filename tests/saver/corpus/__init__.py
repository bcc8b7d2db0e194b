"""Programs from LangGraph's and LangChain's documentation, adapted minimally, that
tests/saver/test_corpus.py runs on LangGraph's `InMemorySaver` and on `HoldpointSaver`.

Each module of this package is one program. It exposes

    def run(checkpointer, pause) -> list

which builds its graphs with `checkpointer`, runs them, and returns what a user of the
program observes: invoke results, stream chunks, `get_state` snapshots and
`get_state_history` listings. Whenever a thread is paused at interrupts, the program
calls `pause(thread_id, interrupt_ids)` before resuming it. Programs are deterministic:
no network, no real model (the fake chat models below), no sleeps; anything a program
counts lives in `run`, so that each run starts afresh.

This module holds what the programs share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.types import Interrupt

Pause = Callable[[str, list[str]], None]


def config(thread_id: str, **configurable: Any) -> dict[str, Any]:
    """A run's config on `thread_id`, as the docs write it."""
    return {"configurable": {"thread_id": thread_id, **configurable}}


class FakeChat(GenericFakeChatModel):
    """LangChain's `GenericFakeChatModel`, answering with the scripted messages in turn,
    and able to stand in for a tool-calling model (`bind_tools` returns it unchanged)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChat:
        return self


def chat(*replies: AIMessage | str) -> FakeChat:
    """A fake chat model that answers with `replies`, one per call."""
    return FakeChat(messages=iter(replies))


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def calls(*tool_calls: dict[str, Any], content: str = "") -> AIMessage:
    """A model's reply asking for `tool_calls`."""
    return AIMessage(content=content, tool_calls=list(tool_calls))


def interrupts_in(result: Any) -> list[Interrupt]:
    """The interrupts an `invoke` result, a list of stream chunks or a snapshot reports."""
    if isinstance(result, dict):
        return list(result.get("__interrupt__", ()))
    if isinstance(result, list):
        return [found for chunk in result for found in interrupts_in(chunk)]
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], tuple):
        return interrupts_in(result[1])  # stream(subgraphs=True): (namespace, chunk)
    return list(getattr(result, "interrupts", ()))


def ids(found: Iterable[Interrupt]) -> list[str]:
    return [each.id for each in found]


def paused(pause: Pause, thread_id: str, result: Any) -> list[Interrupt]:
    """Report the interrupts in `result` (there must be some) to `pause`; return them."""
    found = interrupts_in(result)
    assert found, f"thread {thread_id!r} was expected to pause at an interrupt"
    pause(thread_id, ids(found))
    return found


def interrupts_sorted(result: dict[str, Any]) -> dict[str, Any]:
    """An `invoke` result with its interrupts sorted by their values: interrupts raised by
    tasks that run in parallel are reported in the order the tasks reached them, which
    varies from run to run."""
    found = sorted(result.get("__interrupt__", ()), key=lambda each: repr(each.value))
    return {**result, "__interrupt__": found} if found else result


def history(graph: Any, run_config: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
    """`get_state_history` summed up: each checkpoint's step, source, values, next and
    its tasks' names and interrupts (ids included, as the harness normalizes them)."""
    return [
        {
            "id": snapshot.config["configurable"]["checkpoint_id"],
            "parent": (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
            "step": snapshot.metadata.get("step") if snapshot.metadata else None,
            "source": snapshot.metadata.get("source") if snapshot.metadata else None,
            "values": snapshot.values,
            "next": snapshot.next,
            "tasks": [(task.name, task.interrupts) for task in snapshot.tasks],
        }
        for snapshot in graph.get_state_history(run_config, **kwargs)
    ]
