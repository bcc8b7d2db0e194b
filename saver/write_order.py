"""The order a graph's saves happened in, kept within the process that runs it.

LangGraph saves a step's task writes and the step's checkpoint from background threads,
in no fixed order: a task's writes may reach the saver after the checkpoint they led to,
and a task that consumed an answer may report it before the `Command(resume=...)` that
gave the answer is saved. Recorded in the order they arrive, the record would say a node
ran with an answer nobody had given yet, or a thread completed before its last node did.
Both sides come from one graph run in one process, so the saver puts them back in order
here:

- a checkpoint waits for the writes on its parent checkpoint (the tasks that ran before
  it made them; one that has not begun yet, for a grace) and for a Command's writes in
  flight (saved at the run's start; a thread's first checkpoint, for those of the Command
  that began it), and writes on a checkpoint not saved yet wait for it: a task's plain
  writes parked, to be applied by the checkpoint's own save (saver/threads.py), any
  other here, and so does a subgraph's checkpoint for the one
  its task ran on;
- a task's writes that consumed an answer wait for the answer: a Command's resume saved
  (or refused) in the same run, just before the task ran; a resume map is saved nowhere
  but in the task's own writes, which then record the answers. So do the task's writes
  when the Command's save has not begun within the grace; that resume, saved after
  them, is then matched to the answer they recorded (`HoldpointSaver._consumed`).

Saved here means applied to the thread at hand, in this order; the commits that follow
group several saves (saver/threads.py).

A wait ends, whatever happened, after `TIMEOUT` seconds: then what arrived is recorded as
it arrived. A refused resume never comes: once refused, nothing waits for it, and the
record shows the node ran without an answer on record, which is the truth (LangGraph
runs the node with the answer before it learns of the refusal); nothing of the run after
it is recorded (saver/refused_runs.py).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

TIMEOUT = 5.0
GRACE = 0.1  # for a save to begin that may never come (a resume map's, a checkpoint's)
POLL = 0.005


class InFlight:
    """A save counted in flight (in each of its counters) while it runs, as a `with` block.

    Its beginning wakes no wait: every wait here is for a save to end (or never to come),
    and a save that begins can only prolong it. Its end wakes them all.
    """

    __slots__ = ("_changed", "_counts")

    def __init__(
        self, changed: threading.Condition, counts: list[tuple[Counter[Any], Hashable]]
    ) -> None:
        self._changed = changed
        self._counts = counts

    def __enter__(self) -> None:
        with self._changed:
            for counter, key in self._counts:
                counter[key] += 1

    def __exit__(self, *_: object) -> None:
        with self._changed:
            for counter, key in self._counts:
                counter[key] -= 1
                if not counter[key]:
                    del counter[key]
            self._changed.notify_all()


class WriteOrder:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._writing: Counter[tuple[str, str]] = Counter()  # by thread and checkpoint
        self._commands: Counter[str] = Counter()  # a Command's writes in flight, by thread
        self._refused: set[str] = set()  # threads whose last resume was refused
        self._putting: Counter[tuple[str, str]] = Counter()  # checkpoints being saved

    def writing(self, thread_id: str, checkpoint_id: str, *, command: bool) -> InFlight:
        """Count a save of writes as in flight on its checkpoint while it runs (`command`:
        a Command's writes, which may hold a resume)."""
        counts: list[tuple[Counter[Any], Hashable]] = [(self._writing, (thread_id, checkpoint_id))]
        if command:
            counts.append((self._commands, thread_id))
        return InFlight(self._changed, counts)

    def putting(self, thread_id: str, checkpoint_id: str) -> InFlight:
        """Count a checkpoint's save as in flight while it runs."""
        return InFlight(self._changed, [(self._putting, (thread_id, checkpoint_id))])

    def after_checkpoint(
        self, thread_id: str, checkpoint_id: str, saved: Callable[[], bool]
    ) -> None:
        """Wait (writes on a checkpoint not saved yet) until it is `saved()`, while its save
        is in flight, or for the grace (for its save to begin)."""
        self._wait(saved, lambda: bool(self._putting[thread_id, checkpoint_id]))

    def after_writes(
        self, thread_id: str, checkpoint_id: str | None, written: Callable[[], bool]
    ) -> None:
        """Wait until no save of writes on the checkpoint is in flight, nor any Command's
        save on the thread (a resume, saved at the run's start, may still be landing), and
        the writes of the tasks that ran on it are saved (`written()`): while a save is in
        flight, the checkpoint's own included (writes parked on it are applied by it, and
        no longer counted as in flight themselves), else for the grace (LangGraph submits
        a task's writes before the next checkpoint, to a pool of threads that may begin
        them in either order)."""
        key = (thread_id, checkpoint_id or "")

        def idle() -> bool:
            return not self._writing[key] and not self._commands[thread_id]

        self._wait(lambda: idle() and written(), lambda: not idle() or bool(self._putting[key]))

    def answering(self, thread_id: str, refused: bool) -> None:
        """A resume was saved on the thread, or refused (its answer will never come)."""
        with self._changed:
            if refused:
                self._refused.add(thread_id)
            else:
                self._refused.discard(thread_id)
            self._changed.notify_all()

    def after_answer(self, thread_id: str, answered: Callable[[], bool]) -> None:
        """Wait until `answered()`, unless the thread's resume was refused, while a
        Command's save is in flight on the thread (the resume may be in it), or for a grace
        (for its save to begin). A resume map is saved nowhere but in the tasks' own
        writes: then no Command's save comes, and the grace ends the wait."""
        self._wait(
            lambda: thread_id in self._refused or answered(),
            lambda: bool(self._commands[thread_id]),
        )

    def _wait(self, ready: Callable[[], bool], in_flight: Callable[[], bool]) -> None:
        """Wait until `ready()`: while `in_flight()`, else for the grace (for a save that
        may never come to begin), and `TIMEOUT` at most."""
        if ready():  # as it mostly is: no clock, no lock
            return
        began = time.monotonic()

        def done() -> bool:
            if ready():
                return True
            waited = time.monotonic() - began
            return waited >= TIMEOUT or (not in_flight() and waited >= GRACE)

        with self._changed:
            while not done():
                self._changed.wait(POLL)
