"""The corpus (tests/saver/corpus/): programs from LangGraph's and LangChain's docs run on
LangGraph's `InMemorySaver` and on `HoldpointSaver`, on each store, give the same outputs.

A program's outputs (invoke results, stream chunks, snapshots, histories) are compared
once the ids and timestamps LangGraph makes afresh on every run are normalized: each
distinct uuid (checkpoint, task, run, message ids...) and 32-hex interrupt id becomes a
placeholder numbered in order of first appearance, so that *which* id is which still
compares; timestamps become one placeholder. Everything else compares exactly, types
included (a tuple is not a list, a set is not a list, a model is its class and fields).

On HoldpointSaver, besides the outputs:
- every time the program pauses at interrupts, each interrupt LangGraph reported is in
  Holdpoint's pending-approval queue (the read models caught up first);
- after the run, the hash chain of every thread the program used verifies, the store
  holds the same threads as InMemorySaver did, and the pending-approval queue holds
  no interrupt that LangGraph no longer has (one answered, or left behind by a thread
  that went on).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import pkgutil
import re
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from langgraph.checkpoint.holdpoint import HoldpointSaver
from projections.catalog import runner_for
from projections.pending_approvals import PendingApprovals

# The docs' programs use LangGraph's prebuilt `create_react_agent`, deprecated since
# LangGraph 1.0 (still shipped); the warning says nothing about the saver.
pytestmark = pytest.mark.filterwarnings(
    "ignore:create_react_agent has been moved:langgraph.warnings.LangGraphDeprecatedSinceV10"
)

CORPUS = Path(__file__).parent / "corpus"
PROGRAMS = sorted(info.name for info in pkgutil.iter_modules([str(CORPUS)]))

ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-zA-Z])"
)
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")
INTERRUPT = "__interrupt__"  # the channel of interrupts in a checkpoint's pending writes
KEPT = (int, float, bool, bytes, type(None), dt.date, dt.time, dt.timedelta, uuid.UUID, Decimal)


def program(name: str) -> Any:
    return importlib.import_module(f"tests.saver.corpus.{name}")


class Normalizer:
    """Outputs as plain, comparable data, with the ids made stable (see the module)."""

    def __init__(self) -> None:
        self.placeholders: dict[str, str] = {}

    def text(self, value: str) -> str:
        value = TIMESTAMP.sub("<ts>", value)
        return ID.sub(self._placeholder, value)

    def _placeholder(self, match: re.Match[str]) -> str:
        found = match.group(0)
        return self.placeholders.setdefault(found, f"<id{len(self.placeholders) + 1}>")

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, KEPT) or value is None:
            return value
        if isinstance(value, dict):
            return {self(key): self(item) for key, item in value.items()}
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
            return self.named(type(value), {f: getattr(value, f) for f in value._fields})
        if isinstance(value, tuple):
            return tuple(self(item) for item in value)
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, set | frozenset):
            return (type(value).__name__, frozenset(self.hashable(self(item)) for item in value))
        if isinstance(value, BaseModel):
            return self.named(type(value), {f: getattr(value, f) for f in type(value).model_fields})
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.named(
                type(value), {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            )
        if isinstance(value, BaseException):
            return self.named(type(value), {"args": value.args})
        return self.named(type(value), {"repr": repr(value)})

    def named(self, cls: type, fields: dict[str, Any]) -> dict[str, Any]:
        return {"__class__": f"{cls.__module__}.{cls.__qualname__}"} | {
            name: self(item) for name, item in fields.items()
        }

    def hashable(self, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple((key, self.hashable(item)) for key, item in value.items())
        if isinstance(value, list):
            return tuple(self.hashable(item) for item in value)
        return value


def run_on_memory(name: str) -> tuple[list[Any], set[str]]:
    saver = InMemorySaver()
    pauses: list[Any] = []
    outputs = program(name).run(
        saver, lambda thread_id, ids: pauses.append((thread_id, frozenset(ids)))
    )
    return [*outputs, ("pauses", pauses)], set(saver.storage)


def still_asked(saver: HoldpointSaver, threads: set[str]) -> set[str]:
    """The interrupts LangGraph still holds on `threads`: those in the pending writes of
    each thread's latest checkpoint (a subgraph's interrupt is its parent task's too; a
    functional API task's is its own and its entrypoint's)."""
    found = set()
    for thread_id in threads:
        latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        for _task, channel, value in latest.pending_writes if latest else ():
            if channel == INTERRUPT:
                found.update(each.id for each in value)
    return found


def pending_interrupt_ids(saver: HoldpointSaver) -> set[str]:
    runner = runner_for(saver.store)
    try:
        runner.catch_up()
        return {
            approval.interrupt_id for approval in PendingApprovals(runner.db).page(limit=500).items
        }
    finally:
        runner.close()


def run_on_holdpoint(name: str, url: str) -> tuple[list[Any], set[str]]:
    pauses: list[Any] = []
    with HoldpointSaver.from_conn_string(url) as saver:

        def pause(thread_id: str, ids: list[str]) -> None:
            pauses.append((thread_id, frozenset(ids)))
            pending = pending_interrupt_ids(saver)
            missing = [each for each in ids if each not in pending]
            assert not missing, (
                f"{name}: thread {thread_id!r} is paused at interrupts {ids}, but "
                f"{missing} are not in the pending-approval queue ({sorted(pending)})"
            )

        outputs = program(name).run(saver, pause)
        threads = {found.config["configurable"]["thread_id"] for found in saver.list(None)}
        broken = {
            thread_id: report
            for thread_id in sorted(threads)
            if not (report := saver.store.verify_chain(thread_id)).ok
        }
        assert not broken, f"{name}: broken hash chains {broken}"
        stale = pending_interrupt_ids(saver) - still_asked(saver, threads)
        assert not stale, (
            f"{name}: after the run, the pending-approval queue still holds {sorted(stale)}, "
            "which no thread's latest checkpoint asks"
        )
    return [*outputs, ("pauses", pauses)], threads


def test_the_corpus_is_large_enough():
    assert len(PROGRAMS) >= 32, PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_runs_on_holdpoint_as_on_langgraphs_memory_saver(name, store_url_for):
    expected, expected_threads = run_on_memory(name)
    again, _ = run_on_memory(name)
    assert Normalizer()(again) == Normalizer()(expected), "the program is not deterministic"
    got, threads = run_on_holdpoint(name, store_url_for)

    assert threads == expected_threads
    got, expected = Normalizer()(got), Normalizer()(expected)
    assert got == expected, first_difference(got, expected)


def first_difference(got: Any, expected: Any, path: str = "outputs") -> str:
    """Where two normalized outputs first differ, and how (pytest's own diff of a whole
    program's outputs is too long to read)."""
    if type(got) is not type(expected):
        return (
            f"{path}: {type(got).__name__} {got!r}\n"
            f"  expected {type(expected).__name__} {expected!r}"
        )
    if isinstance(got, dict):
        if set(got) != set(expected):
            return f"{path}: keys {list(got)}\n  expected {list(expected)}"
        for key in got:
            if got[key] != expected[key]:
                return first_difference(got[key], expected[key], f"{path}[{key!r}]")
    if isinstance(got, list | tuple) and len(got) == len(expected):
        for index, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
            if mine != theirs:
                return first_difference(mine, theirs, f"{path}[{index}]")
    return f"{path}: {got!r}\n  expected {expected!r}"
