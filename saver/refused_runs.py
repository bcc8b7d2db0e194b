"""The runs of this process whose Command or branch the saver refused, so that they go
no further.

LangGraph hands a `Command(resume=...)` to the node that asked before the saver has
answered whether the resume may be saved, and runs the node a `Command(goto=...)` names
in the same step: when the Command is refused (the question was answered by another
process first, say, or the goto passes a hold point), the node has run all the same, and
its completion, on the checkpoint the run resumed, is recorded as run on that refusal,
its writes not kept (LangGraph runs it again when the flow reaches it). What the run does
after that is not: its checkpoints, and writes on any other checkpoint, are refused with
`RefusedRunError`. With `durability="sync"`, where LangGraph waits for each checkpoint
before the next step, the run stops there; with "async" LangGraph runs on, and each save
it makes is refused (and the refusal recorded). A refused branch (a run from a past
checkpoint) is refused on the checkpoint it branched from: nothing on the fork is kept.

A run is told by LangGraph's runtime object, one per run of a graph
(`configurable["__pregel_runtime"]`); a save without one belongs to no run known here.
Only this process runs the run, so its memory is where this belongs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from domain.errors import HoldpointError, RefusedRunError
from domain.record.langgraph_record import INTERRUPT, SavedWrites

RUN_KEY = "__pregel_runtime"  # LangGraph's CONFIG_KEY_RUNTIME
KEPT = 1024  # runs remembered; a refused run makes its next save at once


class RefusedRuns:
    """Refused resumes by run (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (thread id, id of the run) -> (the run, the checkpoint it resumed, the refusal)
        self._refused: OrderedDict[tuple[str, int], tuple[Any, str, HoldpointError]] = OrderedDict()

    def refuse(
        self,
        thread_id: str,
        configurable: dict[str, Any],
        checkpoint_id: str,
        error: HoldpointError,
    ) -> None:
        """The run's Command on the thread's checkpoint, or its branch from it, was
        refused with `error`."""
        run = configurable.get(RUN_KEY)
        if run is None:
            return
        with self._lock:  # the run itself kept: while it is, its id is no other's
            self._refused[thread_id, id(run)] = (run, checkpoint_id, error)
            if len(self._refused) > KEPT:
                self._refused.popitem(last=False)

    def check(
        self, thread_id: str, configurable: dict[str, Any], writes: SavedWrites | None = None
    ) -> HoldpointError | None:
        """Raise `RefusedRunError` for a save of a run refused on the thread (`refuse`):
        a checkpoint, or `writes` but for those of a node that ran on the checkpoint it
        went on from (a question asked again there is refused too: it would be
        asked from what was refused). For those, the refusal they ran under: they are
        recorded as having run on it."""
        if not self._refused:  # as it mostly is: no lock
            return None
        run = configurable.get(RUN_KEY)
        if run is None:
            return None
        with self._lock:
            refused = self._refused.get((thread_id, id(run)))
        if refused is None:
            return None
        if (
            writes is not None
            and writes.checkpoint_id == refused[1]
            and all(channel != INTERRUPT for channel, _ in writes.writes)
        ):
            return refused[2]
        raise RefusedRunError(thread_id, refused[2])

    def refuses(
        self, thread_id: str, configurable: dict[str, Any], writes: SavedWrites | None = None
    ) -> bool:
        """Whether `check` raises for the save."""
        try:
            self.check(thread_id, configurable, writes)
        except RefusedRunError:
            return True
        return False
