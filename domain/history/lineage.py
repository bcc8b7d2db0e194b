"""A thread's events read together with those of the thread it was copied from.

A copy of a real LangGraph graph's thread (its ThreadForked has `engine` "langgraph")
starts with the source's latest checkpoints; its earlier ones are the source's, up to
the version it was copied at. Folding the lineage, the source's events and then the
copy's own, reads every checkpoint the copy has, as LangGraph's `copy_thread` copies them
all, while the copy's record holds only what happened on it. A native fork carries its
state and is read from its own events.
"""

from __future__ import annotations

from collections.abc import Iterator

from domain.record.application import Workflows
from domain.record.langgraph_record import LANGGRAPH, START
from domain.record.thread import WorkflowThread


def lineage_events(
    store: Workflows, thread_id: str, lte: int | None = None
) -> Iterator[WorkflowThread.Event]:
    """The thread's events (up to version `lte`), oldest first, after those of the
    thread it was copied from up to the version copied (theirs first, and so on)."""
    events = iter(
        store.iter_thread_events(thread_id)
        if lte is None
        else store.thread_events(thread_id, lte=lte)
    )
    first = next(events, None)
    if first is None:
        return
    if isinstance(first, WorkflowThread.ThreadForked) and first.engine == LANGGRAPH:
        yield from lineage_events(store, first.source_thread_id, first.source_version)
    yield first
    yield from events


def start_nodes(store: Workflows, thread_id: str) -> list[str]:
    """Where the graph started a LangGraph thread, as its record shows: the routes of its
    root `__start__` steps (each input's), the nodes a `Command(goto=...)` may name without
    deciding the flow (`hold_points.check_goto`). Reads the thread's events: for a goto."""
    nodes: dict[str, None] = {}
    for event in lineage_events(store, thread_id):
        if (
            isinstance(event, WorkflowThread.NodeCompleted)
            and event.node == START
            and (event.task or {}).get("namespace", "") == ""
        ):
            nodes.update(dict.fromkeys(event.routes))
    return list(nodes)
