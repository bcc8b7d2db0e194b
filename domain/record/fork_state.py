"""The state a fork carries from its source thread, and how the fork reads it back.

`ThreadForked.state` is recorded, so its shape is a contract: what `carried_state`
writes today, and what `restore_carried_state` reads, including forks recorded before
answers carried the digest of their question. A real LangGraph graph's thread (a
ThreadForked with `engine` "langgraph") carries LangGraph's checkpoints instead:
`langgraph_carried_state`, read back by `restore_langgraph_state`.
"""

from __future__ import annotations

import copy
from typing import Any

from domain.record.thread_state import ThreadState, answer_record


def carried_state(thread: ThreadState) -> dict[str, Any]:
    """What a fork of `thread` starts from: its state as it stands, at its checkpoint."""
    return {
        **_shared_state(thread),
        "done": thread.done,
        "barriers": thread.barriers,
        "bound_answers": thread.answers,
    }


def restore_carried_state(
    thread: ThreadState, state: dict[str, Any], thread_id: str, source_thread_id: str
) -> None:
    """Set up the fork `thread` (`thread_id`) from the `state` it carried."""
    _restore_shared_state(thread, state, thread_id, source_thread_id)
    thread.done = dict(state["done"])
    thread.barriers = dict(state["barriers"])
    # Answers given to an interrupted node that has not run again yet, each with
    # the question it answered ("bound_answers"); forks recorded before digests
    # carried bare values ("answers"), and before that none.
    if "bound_answers" in state:
        thread.answers = {n: list(a) for n, a in state["bound_answers"].items()}
    else:
        legacy = state.get("answers", {})
        thread.answers = {n: [answer_record(v, None, None) for v in a] for n, a in legacy.items()}


def langgraph_carried_state(thread: ThreadState) -> dict[str, Any]:
    """What a copy of a real LangGraph graph's thread starts from: each namespace's latest
    checkpoint (`heads`, with the writes pending on it), the writes saved ahead of their
    checkpoint, the state channels' values, who shaped it, and the decisions governing a
    run that failed. Taken at rest, so no question is pending (domain/history/forks.py)."""
    return {
        **_shared_state(thread),
        "heads": thread.heads,
        "early": thread.early,
        "error": thread.error,
    }


def restore_langgraph_state(
    thread: ThreadState, state: dict[str, Any], thread_id: str, source_thread_id: str
) -> None:
    """Set up the copy `thread` (`thread_id`) of a LangGraph thread from what it carried."""
    _restore_shared_state(thread, state, thread_id, source_thread_id)
    thread.heads = copy.deepcopy(state["heads"])
    thread.early = copy.deepcopy(state["early"])
    thread.error = state["error"]


def _shared_state(thread: ThreadState) -> dict[str, Any]:
    """What every fork carries: the values, where the run stands, the decisions governing
    it, and who shaped the thread."""
    return {
        "values": thread.values,
        "step": thread.step,
        "next": thread.next,
        "decided": thread.decided,
        "shapers": thread.shapers,
        "started_by": thread.started_by.get("id"),
    }


def _restore_shared_state(
    thread: ThreadState, state: dict[str, Any], thread_id: str, source_thread_id: str
) -> None:
    thread.values = dict(state["values"])
    thread.step = state["step"]
    thread.next = list(state["next"])
    thread.decided = dict(state.get("decided", {}))
    thread.shapers = dict(state.get("shapers", {}))
    source_starter = state.get("started_by")
    if source_starter:
        thread.shapers.setdefault(
            source_starter,
            f"started thread {source_thread_id!r}, which {thread_id!r} was forked from",
        )
