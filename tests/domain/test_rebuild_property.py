"""Replay folds events: a thread read back from the store equals the live run.

For generated graphs (stages of one node, two parallel nodes, a choice
between two nodes, or a fan-out whose branches take different numbers of
steps; some nodes interrupt) and generated runs (inputs, resume
values, partial resumes), every state the live run returned must read back
the same through a NEW store object opened on the same SQLite file: with
snapshots taken every 50 events (the default), every 2 events, or none.
"""

from __future__ import annotations

import contextlib
import operator
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypedDict
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.graph import START, StateGraph
from domain.graph.compiled import CompiledStateGraph
from domain.record import application
from domain.record.application import Workflows
from domain.record.store import store_env
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import thread_uuid
from domain.types import Command, interrupt

THREAD = "prop"
CONFIG = {"configurable": {"thread_id": THREAD}}


class Flow(TypedDict):
    trail: Annotated[list, operator.add]
    answers: Annotated[list, operator.add]
    last: str


class OftenSnapshotted(Workflows):
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {WorkflowThread: 2}


class NeverSnapshotted(Workflows):
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {}


def open_as(store_class: type[Workflows], url: str, **env: str) -> Workflows:
    return store_class(env={**store_env(url), **env}, url=url)


# -- generated graphs ---------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One node; two in parallel; a choice of two; or two in parallel where
    the second takes a detour through a third, so the next stage's fan-in
    waits across supersteps."""

    kind: str  # "single", "parallel", "choice" or "detour"
    asks: tuple[bool, ...]

    def names(self, index: int) -> list[str]:
        suffixes = {"single": ("",), "parallel": ("a", "b"), "choice": ("x", "y")}
        return [f"s{index}{suffix}" for suffix in suffixes.get(self.kind, ("a", "b", "c"))]

    def exits(self, index: int) -> list[str]:
        names = self.names(index)
        return [names[0], names[2]] if self.kind == "detour" else names


stages = st.lists(
    st.one_of(
        st.builds(Stage, st.just("single"), st.tuples(st.booleans())),
        st.builds(Stage, st.just("parallel"), st.tuples(st.booleans(), st.booleans())),
        st.builds(Stage, st.just("choice"), st.tuples(st.booleans(), st.booleans())),
        st.builds(Stage, st.just("detour"), st.tuples(st.booleans(), st.booleans(), st.booleans())),
    ),
    min_size=1,
    max_size=5,
)
resume_values = st.one_of(
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.text(alphabet="abc", max_size=3),
    st.fixed_dictionaries({"ok": st.booleans()}),
)


def make_node(name: str, asks: bool, writes_last: bool) -> Any:
    def node(state: Flow) -> dict[str, Any]:
        update: dict[str, Any] = {"trail": [f"{name}@{len(state['trail'])}"]}
        if asks:
            update["answers"] = [[name, interrupt(f"{name}?")]]
        if writes_last:
            update["last"] = name
        return update

    return node


def choose(options: list[str]) -> Any:
    def path(state: Flow) -> str:
        return options[len(state["trail"]) % 2]

    return path


def build_graph(plan: list[Stage], store: Workflows) -> CompiledStateGraph:
    builder = StateGraph(Flow)
    previous: list[str] = [START]
    previous_kind = "single"
    for index, stage in enumerate(plan):
        names = stage.names(index)
        for name, asks in zip(names, stage.asks, strict=True):
            builder.add_node(name, make_node(name, asks, writes_last=stage.kind == "single"))
        if stage.kind == "choice":
            # After a detour only its last exit chooses (its first ends there),
            # so that the stages after it stay in step and never race on `last`.
            sources = previous[-1:] if previous_kind == "detour" else previous
            for source in sources:
                builder.add_conditional_edges(source, choose(names), names)
        else:
            for target in names[:2]:
                if previous_kind in ("parallel", "detour"):
                    builder.add_edge(previous, target)  # waits for every exit
                else:
                    for source in previous:
                        builder.add_edge(source, target)
        if stage.kind == "detour":
            builder.add_edge(names[1], names[2])
        previous, previous_kind = stage.exits(index), stage.kind
    return builder.compile(checkpointer=store)


# -- the property ----------------------------------------------------------------


@dataclass
class Reader:
    """A store object of its own on the same file, and the graph compiled on it."""

    store: Workflows
    graph: CompiledStateGraph


def open_readers(store_class: type[Workflows], url: str, plan: list[Stage]) -> list[Reader]:
    readers = []
    for reader_class, env in (
        (store_class, {}),
        (NeverSnapshotted, {"IS_SNAPSHOTTING_ENABLED": "n"}),
    ):
        store = open_as(reader_class, url, **env)
        readers.append(Reader(store, build_graph(plan, store)))
    assert readers[-1].store.snapshots is None  # the last one folds every event
    return readers


def check_rebuilds(readers: list[Reader], live: CompiledStateGraph, result: Any) -> None:
    returned = {k: v for k, v in result.items() if k != "__interrupt__"}
    live_snapshot = live.get_state(CONFIG)
    live_history = list(live.get_state_history(CONFIG))
    assert live_snapshot.values == returned
    assert list(live_snapshot.interrupts) == result.get("__interrupt__", [])
    for reader in readers:
        thread = reader.store.thread(THREAD)
        assert thread is not None
        assert thread.current_values() == returned
        assert reader.graph.get_state(CONFIG) == live_snapshot
        assert list(reader.graph.get_state_history(CONFIG)) == live_history


def run_and_check(
    store_class: type[Workflows],
    url: str,
    plan: list[Stage],
    inputs: list[list[str]],
    answers: list[Any],
    partial: list[bool],
) -> Workflows:
    store = open_as(store_class, url)
    readers = open_readers(store_class, url, plan)
    graph = build_graph(plan, store)
    try:
        for values in inputs:
            # Given: new input
            result = graph.invoke({"trail": values, "last": "input"}, CONFIG)
            check_rebuilds(readers, graph, result)
            # When: each pause is answered, whole or in part
            for _ in range(4 * len(plan) + 2):
                if "__interrupt__" not in result:
                    break
                pending = result["__interrupt__"]
                answer = answers.pop(0) if answers else "ok"
                if len(pending) == 1:
                    command = Command(resume=answer)
                elif partial and partial.pop(0):
                    command = Command(resume={pending[0].id: answer})
                else:
                    command = Command(resume={i.id: answer for i in pending})
                result = graph.invoke(command, CONFIG)
                # Then: every reader folds the same state the live run returned
                check_rebuilds(readers, graph, result)
            assert "__interrupt__" not in result
    finally:
        for reader in readers:
            reader.store.close()
    return store


@pytest.mark.parametrize(
    "store_class", [Workflows, OftenSnapshotted], ids=["default-snapshots", "snapshot-every-2"]
)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    plan=stages,
    inputs=st.lists(st.lists(st.sampled_from(["p", "q"]), max_size=2), min_size=1, max_size=2),
    answers=st.lists(resume_values, max_size=12),
    partial=st.lists(st.booleans(), max_size=12),
)
def test_a_thread_read_back_through_a_new_store_equals_the_live_run(
    store_class, plan, inputs, answers, partial
):
    # The store's own interval is patched too, so that the variant takes
    # snapshots whichever of the two settings the store reads.
    interval = OftenSnapshotted.snapshotting_intervals[WorkflowThread]
    patch_interval = (
        mock.patch.object(application, "SNAPSHOT_INTERVAL", interval)
        if store_class is OftenSnapshotted and hasattr(application, "SNAPSHOT_INTERVAL")
        else contextlib.nullcontext()
    )
    with tempfile.TemporaryDirectory() as folder, patch_interval:
        url = f"sqlite:///{Path(folder) / 'prop.db'}"
        # Given / When / Then: each step of the run, read back (see run_and_check)
        store = run_and_check(store_class, url, plan, inputs, list(answers), list(partial))
        try:
            # Then: the frequent-snapshot variant really wrote snapshots to read from
            if store_class is OftenSnapshotted:
                assert list(store.snapshots.get(thread_uuid(THREAD)))
        finally:
            store.close()


def test_a_store_class_with_a_snapshot_interval_of_2_snapshots_every_2_events(sqlite_url):
    # Given: a store class that asks for a snapshot every 2 events
    with open_as(OftenSnapshotted, sqlite_url) as store:
        graph = build_graph([Stage("single", (False,))], store)

        # When: a run records 5 events
        graph.invoke({"trail": [], "last": "input"}, CONFIG)

        # Then
        assert len(store.thread_events(THREAD)) == 5
        snapshots = list(store.snapshots.get(thread_uuid(THREAD)))
        assert snapshots
        assert snapshots[-1].originator_version >= 4
