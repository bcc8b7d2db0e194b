"""What a run streams: its `(mode, chunk)` pairs for the "values" and "updates" modes.

Run (runtime.py) emits them as it records; they are read from the thread as it stands,
as LangGraph's stream shows a step closed or a pause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.types import Interrupt

if TYPE_CHECKING:
    from domain.record.thread import WorkflowThread


def pending_interrupts(thread: WorkflowThread) -> list[Interrupt]:
    return [Interrupt(value=r["value"], id=i) for i, r in thread.interrupts.items()]


def values_chunks(thread: WorkflowThread, modes: tuple[str, ...]) -> list[tuple[str, Any]]:
    """The chunks of a closed step (or a run's beginning): the values, then any pause."""
    chunks: list[tuple[str, Any]] = []
    if "values" in modes:
        chunks.append(("values", thread.current_values()))
    if thread.interrupts:
        chunks.extend(interrupt_chunks(thread, modes))
    return chunks


def interrupt_chunks(thread: WorkflowThread, modes: tuple[str, ...]) -> list[tuple[str, Any]]:
    """The chunks of a pause: the pending interrupts, alone and with the values."""
    interrupts = tuple(pending_interrupts(thread))
    chunks: list[tuple[str, Any]] = []
    if "updates" in modes:
        chunks.append(("updates", {"__interrupt__": interrupts}))
    if "values" in modes:
        chunks.append(("values", {**thread.current_values(), "__interrupt__": interrupts}))
    return chunks
