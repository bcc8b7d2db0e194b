"""The order a graph's saves happened in, kept within the process that runs it.

LangGraph saves a step's task writes and the step's checkpoint from background threads,
in no fixed order: a task's writes may reach the saver after the checkpoint they led to,
and a task that consumed an answer may report it before the `Command(resume=...)` that
gave the answer is saved. Recorded in the order they arrive, the record would say a node
ran with an answer nobody had given yet, or a thread completed before its last node did.
Both sides come from one graph run in one process, so the saver puts them back in order
here:

- a checkpoint waits for the writes in flight on its parent checkpoint (the tasks that
  ran before it made them);
- a task's writes that consumed an answer wait for the answer: a Command's resume saved
  (or refused) in the same run, just before the task ran; a resume map is saved nowhere
  but in the task's own writes, which then record the answers.

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
GRACE = 0.02  # for a resume's save to begin, once no other save is in flight
POLL = 0.005


class WriteOrder:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._writing: Counter[tuple[str, str]] = Counter()  # by thread and checkpoint
        self._refused: set[str] = set()  # threads whose last resume was refused

    @contextmanager
    def writing(self, thread_id: str, checkpoint_id: str) -> Iterator[None]:
        """Count a save of writes as in flight on its checkpoint while it runs."""
        key = (thread_id, checkpoint_id)
        with self._changed:
            self._writing[key] += 1
        try:
            yield
        finally:
            with self._changed:
                self._writing[key] -= 1
                if not self._writing[key]:
                    del self._writing[key]
                self._changed.notify_all()

    def after_writes(self, thread_id: str, checkpoint_id: str | None) -> None:
        """Wait until no save of writes on the checkpoint is in flight."""
        if checkpoint_id is None:
            return
        key = (thread_id, checkpoint_id)
        with self._changed:
            self._changed.wait_for(lambda: not self._writing[key], TIMEOUT)

    def answering(self, thread_id: str, refused: bool) -> None:
        """A resume was saved on the thread, or refused (its answer will never come)."""
        with self._changed:
            if refused:
                self._refused.add(thread_id)
            else:
                self._refused.discard(thread_id)
            self._changed.notify_all()

    def after_answer(self, thread_id: str, answered: Callable[[], bool]) -> None:
        """Wait (from within a save of writes) until `answered()`, unless the thread's
        resume was refused, while another save on the thread is in flight (the resume
        may be that one) or for a grace (for its save to begin). A resume map is saved
        nowhere but in the tasks' own writes: then nothing comes, and the grace ends it."""
        began = time.monotonic()

        def done() -> bool:
            if thread_id in self._refused or answered():
                return True
            waited = time.monotonic() - began
            others = self._on_thread(thread_id) - 1
            return waited >= TIMEOUT or (others <= 0 and waited >= GRACE)

        with self._changed:
            while not done():
                self._changed.wait(POLL)

    def _on_thread(self, thread_id: str) -> int:
        return sum(count for (thread, _), count in self._writing.items() if thread == thread_id)
