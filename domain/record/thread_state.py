"""The state a thread's events fold into, and what can be read of it.

`ThreadState` is the aggregate's side that holds and answers, never records: its
attributes (plain JSON data, so that snapshots store them as they are), their
statuses, the questions callers ask of them, the changes the events' folds share,
and the upcaster of older snapshots. `WorkflowThread` (domain/record/thread.py)
inherits it and adds the events and their recording.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any
from uuid import UUID

from domain.record.supersteps import close_step, fold_update

# Statuses, as LangGraph's server names them where it has a name.
IDLE = "idle"
RUNNING = "running"
INTERRUPTED = "interrupted"
FAILED = "failed"
CANCELLED = "cancelled"


def answer_record(resume: Any, digest: str | None, interrupt_id: str | None) -> dict[str, Any]:
    """An answer waiting for its node: the value, and the question it answered."""
    return {"resume": resume, "digest": digest, "interrupt_id": interrupt_id}


@lru_cache(maxsize=1024)
def step_task_id(thread: UUID, step: int, node: str) -> str:
    """The id of `node`'s task in a thread's `step`: a name-based digest, kept for the
    step's other asks (the engine plans a task by it, then records the node under it)."""
    digest = hashlib.sha1(f"{thread.hex}:{step}:{node}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


class ThreadState:
    """One thread's state, as its events tell it.

    Version 2 of the state (snapshots) keeps each waiting answer with the digest of
    the question it answered, who shaped the thread since its last decision, and the
    decisions whose run has not ended (`upcast_v1_v2`); version 3 its engine and, for a
    real LangGraph graph's, the latest checkpoint of each namespace (`upcast_v2_v3`).
    """

    class_version = 3

    id: UUID  # the aggregate's, as eventsourcing keeps them
    engine: str  # "native", or "langgraph" (a real LangGraph graph's, by HoldpointSaver)
    # A real LangGraph graph's latest checkpoint in each namespace (langgraph_folds.py).
    heads: dict[str, dict[str, Any]]
    early: dict[str, list[list[Any]]]  # writes on a checkpoint not recorded yet
    version: int
    thread_id: str
    graph_id: str
    graph_digest: str
    channels: dict[str, str | None]
    waiting_edges: dict[str, list[str]]
    metadata: dict[str, Any]
    started_by: dict[str, Any]
    values: dict[str, Any]
    step: int
    next: list[str]
    done: dict[str, dict[str, Any]]
    interrupts: dict[str, dict[str, Any]]
    answers: dict[str, list[dict[str, Any]]]  # by node, see `answer_record`
    # Who sent input or edited the state since a decision last took effect (its node
    # ran with the answer): principal id -> how, in words.
    shapers: dict[str, str]
    # Answered interrupts whose run has not ended: they govern the state until it does.
    decided: dict[str, dict[str, Any]]
    barriers: dict[str, list[str]]
    error: dict[str, Any] | None
    cancelled: dict[str, Any] | None
    # The version of a RunCancelled that is the thread's last event: nothing runs then,
    # though nodes are pending (a class default: snapshots taken before it lack it).
    halted_at: int | None = None
    checkpoint: dict[str, Any] | None
    parent_checkpoint: dict[str, Any] | None
    run_id: str | None
    forked_from: dict[str, Any] | None
    head_hash: str

    # -- reading -------------------------------------------------------

    @property
    def status(self) -> str:
        if self.cancelled is not None:
            return CANCELLED
        if self.interrupts:
            return INTERRUPTED
        if self.error is not None:
            return FAILED
        if self.next and self.halted_at != self.version:
            return RUNNING
        return IDLE

    def runnable(self) -> list[str]:
        """Nodes of the open step that can run now: not done, not waiting."""
        waiting = {record["node"] for record in self.interrupts.values()}
        return [n for n in self.next if n not in self.done and n not in waiting]

    def pending_nodes(self) -> list[str]:
        return [n for n in self.next if n not in self.done]

    def holds(self) -> dict[str, dict[str, Any]]:
        """The hold points standing, by interrupt id: pending interrupts, and answered ones
        whose run still has nodes to run (domain/oversight/hold_points.py)."""
        held = {
            interrupt_id: {**hold, "state": f"answered: {hold['decision']} by {hold['by']}"}
            for interrupt_id, hold in (self.decided.items() if self.next else ())
        }
        for interrupt_id, record in self.interrupts.items():
            held[interrupt_id] = {**record, "state": "pending"}
        return held

    def shaped_by(self, principal_id: str) -> str | None:
        """How `principal_id` shaped what the thread's next decision is about, if it did:
        started or forked it, or sent input or edited it since the last decision."""
        if self.started_by.get("id") == principal_id:
            return f"{'forked' if self.forked_from else 'started'} thread {self.thread_id!r}"
        return self.shapers.get(principal_id)

    def current_values(self) -> dict[str, Any]:
        """Values with the updates of the open step's finished nodes applied,
        in the schema's key order (as LangGraph shows them)."""
        values = self.values
        if self.engine == "langgraph":  # the root's state channels, in their JSON form
            return dict(values)
        if self.done:
            values = dict(values)
            for node in sorted(self.done):
                fold_update(values, self.done[node]["update"], self.channels)
        return self.in_schema_order(values)

    def in_schema_order(self, values: dict[str, Any]) -> dict[str, Any]:
        if self.engine == "langgraph":
            return values
        return {key: values[key] for key in self.channels if key in values}

    def task_id(self, node: str) -> str:
        """The id of `node`'s task in the open step (the same on every re-run)."""
        return step_task_id(self.id, self.step + 1, node)

    def written_in_open_step(self) -> dict[str, str]:
        """Last-value keys already written in the open step, by node."""
        written: dict[str, str] = {}
        for node, record in self.done.items():
            for key in record["update"]:
                if self.channels.get(key, "") is None:
                    written[key] = node
        return written

    # -- what the events' folds share ------------------------------------

    def _mark_checkpoint(self, event: Any, source: str) -> None:
        self.parent_checkpoint = self.checkpoint
        self.checkpoint = {
            "version": event.originator_version,
            "hash": event.event_hash,
            "source": source,
            "step": self.step,
            "created_at": event.timestamp.isoformat(),
        }

    def _decided(self, interrupt_id: str, record: dict[str, Any], decision: str, by: Any) -> None:
        """An interrupt was answered: it governs the state until its run ends."""
        self.decided[interrupt_id] = {
            "node": record["node"],
            "required_role": record.get("required_role"),
            "decision": decision,
            "by": by,
        }

    def _close_step(self, event: Any) -> None:
        """Every node of the open step has finished: the next step opens (supersteps.py)."""
        self.next = close_step(
            self.values, self.done, self.channels, self.waiting_edges, self.barriers
        )
        self.done = {}
        self.answers = {}
        self.error = None
        self.step += 1
        self._mark_checkpoint(event, "loop")

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """A snapshot of version 1: bare answers (they apply by position alone), no
        shapers or running decisions recorded."""
        state["answers"] = {
            node: [answer_record(value, None, None) for value in values]
            for node, values in state.get("answers", {}).items()
        }
        state.setdefault("shapers", {})
        state.setdefault("decided", {})

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        """A snapshot of version 2: a native thread (real LangGraph graphs came after)."""
        state.setdefault("engine", "native")
        state.setdefault("heads", {})
        state.setdefault("early", {})
