"""The order a graph's saves happened in, kept within the process that runs it.

LangGraph saves a step's task writes and the step's checkpoint from background threads,
in no fixed order: a task's writes may reach the saver after the checkpoint they led to,
and a task that consumed an answer may report it before the `Command(resume=...)` that
gave the answer is saved. Recorded in the order they arrive, the record would say a node
ran with an answer nobody had given yet, or a thread completed before its last node did.
Both sides come from one graph run in one process, so the saver puts them back in order
here:

- a checkpoint waits for the writes in flight on its parent checkpoint (the tasks that
  ran before it made them) and for a Command's writes in flight (saved at the run's
  start), and writes on a checkpoint not saved yet wait for it;
- a task's writes that consumed an answer wait for the answer: a Command's resume saved
  (or refused) in the same run, just before the task ran; a resume map is saved nowhere
  but in the task's own writes, which then record the answers.

Saved here means applied to the thread at hand, in this order; the commits that follow
group several saves (saver/threads.py).

A wait ends, whatever happened, after `TIMEOUT` seconds: then what arrived is recorded as
it arrived. A refused resume never comes: once refused, nothing waits for it, and the
record shows the node ran past its question without an answer on record, which is the
truth (LangGraph runs the node with the answer before it learns of the refusal).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

TIMEOUT = 5.0
GRACE = 0.1  # for a save to begin that may never come (a resume map's, a checkpoint's)
POLL = 0.005


class WriteOrder:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._writing: Counter[tuple[str, str]] = Counter()  # by thread and checkpoint
        self._commands: Counter[str] = Counter()  # a Command's writes in flight, by thread
        self._refused: set[str] = set()  # threads whose last resume was refused
        self._putting: Counter[tuple[str, str]] = Counter()  # checkpoints being saved

    @contextmanager
    def writing(self, thread_id: str, checkpoint_id: str, *, command: bool) -> Iterator[None]:
        """Count a save of writes as in flight on its checkpoint while it runs (`command`:
        a Command's writes, which may hold a resume)."""
        key = (thread_id, checkpoint_id)
        with self._changed:
            self._writing[key] += 1
            self._commands[thread_id] += command
            self._changed.notify_all()  # a wait for a Command's save to begin ends
        try:
            yield
        finally:
            with self._changed:
                self._writing[key] -= 1
                if not self._writing[key]:
                    del self._writing[key]
                self._commands[thread_id] -= command
                if not self._commands[thread_id]:
                    del self._commands[thread_id]
                self._changed.notify_all()

    @contextmanager
    def putting(self, thread_id: str, checkpoint_id: str) -> Iterator[None]:
        """Count a checkpoint's save as in flight while it runs."""
        key = (thread_id, checkpoint_id)
        with self._changed:
            self._putting[key] += 1
            self._changed.notify_all()  # a wait for its save to begin ends
        try:
            yield
        finally:
            with self._changed:
                self._putting[key] -= 1
                if not self._putting[key]:
                    del self._putting[key]
                self._changed.notify_all()

    def after_checkpoint(
        self, thread_id: str, checkpoint_id: str, saved: Callable[[], bool]
    ) -> None:
        """Wait (writes on a checkpoint not saved yet) until it is `saved()`, while its save
        is in flight, or for the grace (for its save to begin)."""
        began = time.monotonic()
        key = (thread_id, checkpoint_id)

        def done() -> bool:
            if saved():
                return True
            waited = time.monotonic() - began
            return waited >= TIMEOUT or (not self._putting[key] and waited >= GRACE)

        with self._changed:
            while not done():
                self._changed.wait(POLL)

    def after_writes(self, thread_id: str, checkpoint_id: str | None) -> None:
        """Wait until no save of writes on the checkpoint is in flight, nor any Command's
        save on the thread (a resume, saved at the run's start, may still be landing)."""
        key = (thread_id, checkpoint_id or "")

        def done() -> bool:
            return not self._writing[key] and not self._commands[thread_id]

        with self._changed:
            self._changed.wait_for(done, TIMEOUT)

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
        began = time.monotonic()

        def done() -> bool:
            if thread_id in self._refused or answered():
                return True
            waited = time.monotonic() - began
            return waited >= TIMEOUT or (not self._commands[thread_id] and waited >= GRACE)

        with self._changed:
            while not done():
                self._changed.wait(POLL)
