"""The order of a real LangGraph graph's record: LangGraph saves a step's task writes
and its checkpoints from a pool of threads, in no fixed order, and the saver puts them
back in the order they happened (saver/write_order.py, saver/threads.py). Each race is
forced here by a saver whose saves begin in the order the race allows."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections import defaultdict
from collections.abc import Hashable
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from domain.errors import HoldpointError
from langgraph.checkpoint.holdpoint import HoldpointSaver
from saver import write_order
from saver.threads import Save, Threads
from tests.saver.langgraph_graphs import refund_builder, thread
from tests.saver.test_record import REVIEWER, events_of, names
from tests.saver.test_strict import NULL_TASK_ID
from tests.saver.test_threads import WAIT


class Count(TypedDict):
    n: int


def counting_builder(limit: int) -> StateGraph[Count]:
    """`inc` adds one to n until it reaches `limit`: a step per node run."""
    builder = StateGraph(Count)
    builder.add_node("inc", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", lambda state: "inc" if state["n"] < limit else END)
    return builder


def nodes_each_between_its_checkpoint_and_the_next(saver: HoldpointSaver) -> list[str]:
    """The nodes completed on thread "t", each asserted on record after the checkpoint
    its task ran on and before the next one."""
    events = saver.store.thread_events("t")
    saved_at = {
        e.checkpoint_id: i for i, e in enumerate(events) if type(e).__name__ == "CheckpointSaved"
    }
    completed = [(i, e) for i, e in enumerate(events) if type(e).__name__ == "NodeCompleted"]
    for at, node in completed:
        ran_on = node.task["checkpoint_id"]
        assert saved_at[ran_on] < at  # after the checkpoint it ran on
        later = [i for i in saved_at.values() if i > saved_at[ran_on]]
        assert not later or at < min(later)  # before the next one
    assert saver.store.verify_chain("t").ok
    return [node.node for _, node in completed]


def test_a_tasks_writes_go_on_record_after_the_checkpoint_they_ran_on_and_before_the_next(
    store,
):
    # LangGraph hands a task's writes to the saver while the checkpoint the task ran on
    # may still be in its background save; the saver parks them until that checkpoint is
    # saved (saver/threads.py), so the record keeps the order in which things happened.
    saver = HoldpointSaver(store)

    counting_builder(200).compile(checkpointer=saver).invoke(
        {"n": 0}, {**thread("t"), "recursion_limit": 250}
    )

    assert nodes_each_between_its_checkpoint_and_the_next(saver) == ["__start__"] + ["inc"] * 200


class WritesAfterTheNextSave(HoldpointSaver):
    """A saver whose task writes reach it only once the next checkpoint's save has begun:
    LangGraph submits a task's writes before that save, to a pool of threads that may
    begin them in either order."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.begun: defaultdict[str | None, threading.Event] = defaultdict(threading.Event)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.begun[config["configurable"].get("checkpoint_id")].set()
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        assert self.begun[config["configurable"]["checkpoint_id"]].wait(WAIT)
        super().put_writes(config, writes, task_id, task_path)


def test_a_steps_checkpoint_goes_on_record_after_its_tasks_writes_that_began_after_it(store):
    # The checkpoint's save waits for the writes of each task that ran on its parent (its
    # versions seen changed), for a grace while none is in flight (saver/write_order.py).
    saver = WritesAfterTheNextSave(store)

    counting_builder(20).compile(checkpointer=saver).invoke({"n": 0}, thread("t"))

    assert nodes_each_between_its_checkpoint_and_the_next(saver) == ["__start__"] + ["inc"] * 20


def test_an_async_run_keeps_the_same_order(store):
    # `ainvoke` saves through aput and aput_writes, each the sync save in a thread.
    saver = WritesAfterTheNextSave(store)
    graph = counting_builder(20).compile(checkpointer=saver)

    asyncio.run(graph.ainvoke({"n": 0}, thread("t")))

    assert nodes_each_between_its_checkpoint_and_the_next(saver) == ["__start__"] + ["inc"] * 20


def test_writes_that_begin_past_the_grace_go_on_record_late_and_change_nothing_else(
    store, monkeypatch
):
    # Out of order, but each node with the step it ran in, the state as LangGraph left it.
    monkeypatch.setattr(write_order, "GRACE", 0.0)
    saver = WritesAfterTheNextSave(store)
    graph = counting_builder(5).compile(checkpointer=saver)

    assert graph.invoke({"n": 0}, thread("t")) == {"n": 5}

    completed = events_of(saver, "t", "NodeCompleted")
    assert sorted((e.step, e.node) for e in completed) == [(0, "__start__")] + [
        (step, "inc") for step in range(1, 6)
    ]
    assert graph.get_state(thread("t")).values == {"n": 5}
    assert saver.store.verify_chain("t").ok


def test_a_step_of_sends_goes_on_record_before_the_checkpoint_after_it(store):
    # One task ran for each Send the parent checkpoint holds.
    class Fan(TypedDict):
        items: list[int]
        done: Annotated[list[int], operator.add]

    builder = StateGraph(Fan)
    builder.add_node("plan", lambda state: {})
    builder.add_node("work", lambda item: {"done": [item["item"] * 2]})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges(
        "plan", lambda state: [Send("work", {"item": i}) for i in state["items"]], ["work"]
    )
    builder.add_edge("work", END)
    saver = WritesAfterTheNextSave(store)

    done = builder.compile(checkpointer=saver).invoke({"items": [1, 2, 3], "done": []}, thread("t"))

    assert sorted(done["done"]) == [2, 4, 6]
    assert nodes_each_between_its_checkpoint_and_the_next(saver) == [
        "__start__",
        "plan",
        "work",
        "work",
        "work",
    ]


class ParkedWriterWakesLate(Threads):
    """Threads whose parked writes (a task's, handed over before the checkpoint it ran on
    is saved) wake their caller only once the next checkpoint is saved: under load,
    LangGraph's pool may not run that caller again before the next save begins."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.parked = threading.Event()
        self.next_saved = threading.Event()

    def park(self, *args: Any, **kwargs: Any) -> Save | None:
        save = super().park(*args, **kwargs)
        if save is not None:
            self.parked.set()
        return save

    def commit_parked(self, save: Save, until: Hashable, timeout: float) -> Save:
        committed = super().commit_parked(save, until, timeout)
        assert self.next_saved.wait(WAIT)
        return committed


class StepOneParksItsWrites(HoldpointSaver):
    """A saver whose step-1 checkpoint is saved only once the writes of the task that ran
    on it are parked, and whose step-2 checkpoint tells them it is saved."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.threads = self._threads = ParkedWriterWakesLate(self.store)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata.get("step") == 1:
            assert self.threads.parked.wait(WAIT)
        saved = super().put(config, checkpoint, metadata, new_versions)
        if metadata.get("step") == 2:
            self.threads.next_saved.set()
        return saved


def test_a_checkpoint_waits_for_writes_parked_on_its_parent_only_until_they_are_applied(
    store, monkeypatch
):
    # The writes are applied by the parent's save and committed with it; the next
    # checkpoint then goes on, with no wait for their caller to wake (it would wait past
    # WAIT, and the run fail, if it did).
    monkeypatch.setattr(write_order, "TIMEOUT", 3 * WAIT)
    saver = StepOneParksItsWrites(store)

    counting_builder(4).compile(checkpointer=saver).invoke({"n": 0}, thread("t"))

    assert nodes_each_between_its_checkpoint_and_the_next(saver) == ["__start__"] + ["inc"] * 4


class SubgraphFirst(HoldpointSaver):
    """A saver whose root checkpoints after the input begin only once a subgraph's save
    has: LangGraph saves a step's checkpoint in the background while the next step's
    tasks, a subgraph among them, already run."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.subgraph_began = threading.Event()

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if config["configurable"].get("checkpoint_ns"):
            self.subgraph_began.set()
        elif metadata.get("step") == 0:
            assert self.subgraph_began.wait(WAIT)
        return super().put(config, checkpoint, metadata, new_versions)


def test_a_subgraphs_checkpoints_go_on_record_after_the_checkpoint_its_task_ran_on(store):
    class Number(TypedDict):
        n: int

    inner = StateGraph(Number)
    inner.add_node("add", lambda state: {"n": state["n"] + 1})
    inner.add_edge(START, "add")
    builder = StateGraph(Number)
    builder.add_node("inner", inner.compile())
    builder.add_edge(START, "inner")
    saver = SubgraphFirst(store)

    assert builder.compile(checkpointer=saver).invoke({"n": 1}, thread("t")) == {"n": 2}

    events = saver.store.thread_events("t")
    ran_on = next(e for e in events if getattr(e, "node", "") == "inner").task["checkpoint_id"]
    root_saved = next(i for i, e in enumerate(events) if getattr(e, "checkpoint_id", "") == ran_on)
    inner_saved = [
        i
        for i, e in enumerate(events)
        if type(e).__name__ == "CheckpointSaved" and e.namespace.startswith("inner:")
    ]
    assert inner_saved
    assert root_saved < min(inner_saved)
    assert saver.store.verify_chain("t").ok


class CommandAfter(HoldpointSaver):
    """A saver whose Command writes reach it only once a task's write on `channel` has:
    handed over (`saved=False`) or saved. LangGraph saves both from its pool of threads,
    the Command's submitted first."""

    def __init__(self, store: Any, channel: str, *, saved: bool) -> None:
        super().__init__(store)
        self.channel, self.saved = channel, saved
        self.released = threading.Event()

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if task_id == NULL_TASK_ID:
            assert self.released.wait(WAIT)
        releases = task_id != NULL_TASK_ID and any(c == self.channel for c, _ in writes)
        if releases and not self.saved:
            self.released.set()
        try:
            super().put_writes(config, writes, task_id, task_path)
        finally:  # saved, or refused
            if releases and self.saved:
                self.released.set()


def command_after_its_task(store: Any) -> CommandAfter:
    """The Command's resume reaches the saver once the task that consumed it has begun
    to hand over its writes."""
    return CommandAfter(store, "__resume__", saved=False)


def test_a_resume_goes_on_record_before_the_node_that_consumed_it_when_saved_after_it(store):
    saver = command_after_its_task(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread("t"))

    graph.invoke(Command(resume=True), thread("t", actor=REVIEWER, decision="approve"))

    recorded = names(saver, "t")
    reviewed = [
        i
        for i, e in enumerate(saver.store.thread_events("t"))
        if getattr(e, "node", "") == "review"
    ]
    assert recorded.count("InterruptResumed") == 1
    assert recorded.index("InterruptResumed") < reviewed[-1]
    resumed = events_of(saver, "t", "InterruptResumed")[0]
    assert (resumed.resume, resumed.decision, resumed.actor["id"]) == (True, "approve", "rita")
    assert saver.store.verify_chain("t").ok


def test_a_resume_saved_after_its_node_past_the_grace_is_matched_to_the_answer_recorded(
    store, monkeypatch
):
    # No grace: the task's writes record the answer first, as for a resume map; the
    # Command's resume, saved after them, is matched to it, not refused as answering
    # nothing.
    monkeypatch.setattr(write_order, "GRACE", 0.0)
    saver = command_after_its_task(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread("t"))

    graph.invoke(Command(resume=True), thread("t", actor=REVIEWER, decision="approve"))

    assert names(saver, "t").count("InterruptResumed") == 1
    assert graph.get_state(thread("t")).values["log"] == ["reviewed: True", "paid 150"]
    assert saver.store.verify_chain("t").ok


def test_a_command_is_held_to_the_questions_standing_when_given_not_those_its_run_asked(store):
    # Given a new thread, and an agent's Command that starts it where its graph starts
    # (as a server runs it, telling the saver where that is)
    saver = CommandAfter(store, "__interrupt__", saved=True)  # after the question it led to
    graph = refund_builder().compile(checkpointer=saver)
    agent = thread(
        "t", actor={"id": "zed", "role": "agent"}, holdpoint_graph={"starts": ["review"]}
    )

    # When the question it led to is saved before the Command itself
    graph.invoke(Command(update={"amount": 90}, goto="review"), agent)

    # Then the Command is recorded (no hold point stood when it was given), and the
    # question it led to stands
    edited = events_of(saver, "t", "StateEdited")
    assert [(e.values, e.next, e.actor["id"]) for e in edited] == [
        ({"amount": 90}, ["review"], "zed")
    ]
    (pending,) = saver.store.thread("t").interrupts.values()
    assert pending["value"]["amount"] == 90
    assert saver.store.verify_chain("t").ok


def test_a_run_saved_only_at_its_exit_waits_for_no_writes(store, monkeypatch):
    # Its one checkpoint is several steps after its parent, and no task's writes are saved.
    monkeypatch.setattr(write_order, "GRACE", WAIT)  # a wait for them would last WAIT
    saver = HoldpointSaver(store)
    graph = counting_builder(3).compile(checkpointer=saver)
    graph.invoke({"n": 0}, thread("t"))

    began = time.monotonic()
    graph.invoke({"n": 0}, thread("t"), durability="exit")

    assert time.monotonic() - began < WAIT / 2
    assert graph.get_state(thread("t")).values == {"n": 3}
    assert saver.store.verify_chain("t").ok


def test_writes_on_a_checkpoint_never_saved_go_on_record_alone_after_the_wait(store, monkeypatch):
    # A task's writes on a checkpoint not saved yet wait for its save (LangGraph has
    # submitted it) up to the write order's timeout, 5 s; called by hand on a checkpoint
    # that never comes, they then go on record alone, and the checkpoint, saved later,
    # has them.
    monkeypatch.setattr(write_order, "TIMEOUT", 0.3)
    saver = HoldpointSaver(store)
    first = saver.put(thread("t"), empty_checkpoint(), {"source": "input", "step": -1}, {})
    later = empty_checkpoint()
    on_later = {"configurable": {**first["configurable"], "checkpoint_id": later["id"]}}

    began = time.monotonic()
    saver.put_writes(on_later, [("n", 1)], "task-1")

    assert time.monotonic() - began >= write_order.TIMEOUT
    assert names(saver, "t")[-2:] == ["CheckpointSaved", "NodeCompleted"]
    saver.put(first, later, {"source": "loop", "step": 0}, {})
    assert saver.get_tuple(on_later).pending_writes == [("task-1", "n", 1)]
    assert saver.store.verify_chain("t").ok


def test_a_thread_a_command_begins_goes_on_record_in_order_and_waits_for_nothing(
    store, monkeypatch
):
    # LangGraph saves the Command's writes on the empty checkpoint it begins a thread
    # from, which it never saves: a wait for that checkpoint would last the grace, and
    # the saves behind it would then land in the order they happened to run.
    monkeypatch.setattr(write_order, "GRACE", WAIT)
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)

    for n in range(5):
        began = time.monotonic()
        graph.invoke(Command(update={"amount": 30}, goto="review"), thread(f"t{n}"))

        assert time.monotonic() - began < WAIT / 2
        assert names(saver, f"t{n}") == [
            "ThreadStarted",
            "StateEdited",
            "WritesSaved",
            "InputReceived",
            "CheckpointSaved",
            "NodeCompleted",
            "CheckpointSaved",
            "InterruptRaised",
            "WritesSaved",
        ]
        assert saver.store.verify_chain(f"t{n}").ok


class CommandAfterCheckpoint(HoldpointSaver):
    """A saver whose Command writes reach it only once the thread's first checkpoint's save
    has begun: LangGraph submits both to its pool, the Command's first, and a pool's
    first run in a process (`ainvoke`'s) may begin them in the other order."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.putting = threading.Event()

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.putting.set()
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if task_id == NULL_TASK_ID:
            assert self.putting.wait(WAIT)
        super().put_writes(config, writes, task_id, task_path)


def test_a_threads_first_checkpoint_waits_for_the_command_that_began_it(store, monkeypatch):
    monkeypatch.setattr(write_order, "GRACE", WAIT)
    saver = CommandAfterCheckpoint(store)
    graph = refund_builder().compile(checkpointer=saver)
    began = time.monotonic()

    graph.invoke(Command(update={"amount": 30}, goto="review"), thread("t"))

    assert time.monotonic() - began < WAIT / 2
    assert names(saver, "t")[:5] == [
        "ThreadStarted",
        "StateEdited",
        "WritesSaved",
        "InputReceived",
        "CheckpointSaved",
    ]
    assert saver.store.verify_chain("t").ok


def test_a_resume_saved_after_the_node_re_run_since_an_edit_is_refused_there_too(store):
    # Given a refund paused at its question, whose amount a reviewer then edits, and a
    # saver that takes the Command's resume only once the task it led to has saved its
    # writes (the node run again from the edited state, on the answer it was handed)
    saver = CommandAfter(store, "__resume__", saved=True)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread("t", actor={"id": "amy", "role": "agent"}))
    (asked,) = saver.store.thread("t").interrupts
    graph.update_state(thread("t", actor={"id": "rob", "role": "reviewer"}), {"amount": 9})

    # When another reviewer resumes it, naming no question
    rita = thread("t", actor={"id": "rita", "role": "reviewer"}, decision="approve")
    with pytest.raises(HoldpointError, match="edited since"):
        graph.invoke(Command(resume=True), rita, durability="sync")

    # Then the task's writes, saved first, record no answer either
    assert events_of(saver, "t", "InterruptResumed") == []
    assert list(saver.store.thread("t").interrupts) == [asked]
    assert saver.store.verify_chain("t").ok
