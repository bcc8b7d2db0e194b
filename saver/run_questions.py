"""The questions each run of this process asked, so that a Command is held to the hold
points that stood when it was given.

LangGraph saves a run's `Command(update=..., goto=...)` from a background thread while the
run's tasks go on, so a task that asks a question (an interrupt) may have its writes
saved first. That question was asked after the Command was given, by the run the
Command began: it does not stand against the Command (`hold_points.check_holds`'s
`since`), or a Command that leads to a question would be refused at random, by the order
LangGraph's threads happened to save in.

A run is told by LangGraph's runtime object, as in saver/refused_runs.py; only this
process runs the run, so its memory is where this belongs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from saver.refused_runs import KEPT, RUN_KEY


class RunQuestions:
    """The interrupts each run asked on each thread, the latest `KEPT` runs'."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (thread, id(run)) -> (the run itself, kept so its id is no other's; the ids asked)
        self._asked: OrderedDict[tuple[str, int], tuple[Any, set[str]]] = OrderedDict()

    def asked(self, thread_id: str, configurable: dict[str, Any], ids: Iterable[str]) -> None:
        """The run asked the interrupts `ids` on the thread."""
        run = configurable.get(RUN_KEY)
        if run is None:
            return
        with self._lock:
            kept = self._asked.setdefault((thread_id, id(run)), (run, set()))
            kept[1].update(ids)
            if len(self._asked) > KEPT:
                self._asked.popitem(last=False)

    def of(self, thread_id: str, configurable: dict[str, Any]) -> frozenset[str]:
        """The interrupts the run asked on the thread so far."""
        run = configurable.get(RUN_KEY)
        if run is None or not self._asked:
            return frozenset()
        with self._lock:
            kept = self._asked.get((thread_id, id(run)))
            return frozenset(kept[1]) if kept is not None else frozenset()
