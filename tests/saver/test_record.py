"""What HoldpointSaver records of a real LangGraph graph: given a graph compiled on it,
when it runs, then the catalogue's events, each carrying what an auditor needs."""

from __future__ import annotations

import operator
import threading
import time
from collections import Counter, defaultdict
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.holdpoint import HoldpointSaver
from saver import write_order
from tests.saver.langgraph_graphs import refund_builder, thread
from tests.saver.test_strict import NULL_TASK_ID
from tests.saver.test_threads import WAIT

REVIEWER = {"id": "rita", "role": "reviewer"}


def names(saver: HoldpointSaver, thread_id: str) -> list[str]:
    return [type(event).__name__ for event in saver.store.thread_events(thread_id)]


def events_of(saver: HoldpointSaver, thread_id: str, name: str) -> list[Any]:
    return [e for e in saver.store.thread_events(thread_id) if type(e).__name__ == name]


def test_a_paused_and_resumed_run_is_on_record_as_the_catalogue_events(store):
    saver = HoldpointSaver(store, graph_id="refund")
    graph = refund_builder().compile(checkpointer=saver)

    graph.invoke({"amount": 150}, thread("t", actor={"id": "amy", "role": "agent"}))
    graph.invoke(
        Command(resume=True),
        thread("t", actor=REVIEWER, decision="approve", reason="Receipt checked"),
    )

    # LangGraph saves a step's writes and its next checkpoint in the background, in no
    # fixed order: the kinds and their count are fixed, and what must come first does.
    recorded = names(saver, "t")
    assert Counter(recorded) == {
        "ThreadStarted": 1,
        "InputReceived": 1,
        "CheckpointSaved": 4,  # the input, and after __start__, review and pay
        "NodeCompleted": 3,  # __start__, review (with the answer) and pay
        "InterruptRaised": 1,
        "WritesSaved": 2,  # the interrupt and the resume, as LangGraph saved them
        "InterruptResumed": 1,
        "ThreadCompleted": 1,
    }
    assert recorded[:3] == ["ThreadStarted", "InputReceived", "CheckpointSaved"]
    assert recorded.index("InterruptRaised") < recorded.index("InterruptResumed")
    started = events_of(saver, "t", "ThreadStarted")[0]
    assert (started.graph_id, started.engine, started.actor["id"]) == ("refund", "langgraph", "amy")
    raised = events_of(saver, "t", "InterruptRaised")[0]
    assert raised.node == "review"
    assert raised.value == {"question": "Approve the refund?", "amount": 150}
    resumed = events_of(saver, "t", "InterruptResumed")[0]
    assert resumed.interrupt_id == raised.interrupt_id
    assert (resumed.resume, resumed.decision, resumed.reason) == (
        True,
        "approve",
        "Receipt checked",
    )
    assert resumed.actor == {**REVIEWER, "authenticated": False, "via": "config"}
    assert resumed.digest == raised.digest
    assert saver.store.verify_chain("t").ok


def test_each_task_is_one_node_completion_with_its_writes_as_the_update(store):
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)

    graph.invoke({"amount": 150}, thread("t"))
    graph.invoke(Command(resume=True), thread("t"))

    completed = {e.node: e for e in events_of(saver, "t", "NodeCompleted")}
    assert sorted(completed) == ["__start__", "pay", "review"]
    assert completed["pay"].update == {"log": ["paid 150"]}
    assert completed["review"].update["log"] == ["reviewed: True"]
    assert completed["review"].routes == ["pay"]
    raised = events_of(saver, "t", "InterruptRaised")[0]
    assert completed["review"].applied == [
        {"interrupt_id": raised.interrupt_id, "digest": raised.digest}
    ]
    assert completed["review"].task["path"] == "~__pregel_pull, review"


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[list[int], operator.add]


def chat_graph() -> StateGraph[Chat]:
    def reply(state: Chat) -> dict[str, Any]:
        said = state["messages"][-1].content
        return {"messages": [AIMessage(f"you said {said}", id=f"ai-{len(state['messages'])}")]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


def test_a_checkpoint_records_only_the_messages_a_turn_added(store):
    saver = HoldpointSaver(store)
    graph = chat_graph().compile(checkpointer=saver)

    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(f"m{turn}", id=f"h{turn}")]}, thread("c"))

    last = events_of(saver, "c", "CheckpointSaved")[-1]
    assert last.grown == {
        "messages": [{"$type": "message", "type": "ai", "content": "you said m2", "id": "ai-5"}]
    }
    assert "messages" not in last.changed
    state = graph.get_state(thread("c")).values
    assert [m.content for m in state["messages"]][-2:] == ["m2", "you said m2"]
    assert isinstance(state["messages"][-1], AIMessage)


def test_messages_are_recorded_as_json_an_auditor_can_read(store):
    saver = HoldpointSaver(store)
    graph = chat_graph().compile(checkpointer=saver)

    graph.invoke({"messages": [HumanMessage("hello", id="h1")]}, thread("c"))

    reply = next(e for e in events_of(saver, "c", "NodeCompleted") if e.node == "reply")
    assert reply.update["messages"] == [
        {"$type": "message", "type": "ai", "content": "you said hello", "id": "ai-1"}
    ]


def test_reading_a_thread_runs_no_node_code(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    with HoldpointSaver.from_conn_string(url) as saver:
        refund_builder().compile(checkpointer=saver).invoke({"amount": 5}, thread("t"))

    def broken(state: Any) -> Any:
        raise AssertionError("node code ran on a read")

    builder = StateGraph(refund_builder().state_schema)
    builder.add_node("review", broken)
    builder.add_node("pay", broken)
    builder.add_edge(START, "review")
    builder.add_edge("review", "pay")
    with HoldpointSaver.from_conn_string(url) as saver:
        graph = builder.compile(checkpointer=saver)
        snapshot = graph.get_state(thread("t"))
        history = list(graph.get_state_history(thread("t")))

    assert snapshot.values == {"amount": 5, "log": []}
    assert snapshot.next == ("review",)
    assert [h.metadata["source"] for h in history] == ["loop", "input"]


def test_new_input_on_a_paused_thread_supersedes_its_question(store):
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 80}, thread("t"))
    first = events_of(saver, "t", "InterruptRaised")[0]

    graph.invoke({"amount": 90}, thread("t"))

    superseded = events_of(saver, "t", "InterruptSuperseded")
    assert [e.interrupt_id for e in superseded] == [first.interrupt_id]
    assert "new input" in superseded[0].reason
    assert list(saver.store.thread("t").interrupts) != [first.interrupt_id]


def test_an_edit_while_paused_is_a_state_edit_and_the_question_stays_open(store):
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 300}, thread("t"))

    graph.update_state(
        thread("t", actor={"id": "ed", "role": "admin"}, reason="typo"), {"amount": 250}
    )
    graph.invoke(Command(resume=True), thread("t"))

    edited = events_of(saver, "t", "StateEdited")[0]
    assert edited.values == {"amount": 250}
    assert (edited.actor["id"], edited.reason) == ("ed", "typo")
    assert events_of(saver, "t", "InterruptSuperseded") == []
    assert graph.get_state(thread("t")).values["log"] == ["reviewed: True", "paid 250"]


class Inner(TypedDict):
    x: int


def test_an_interrupt_inside_a_subgraph_is_in_the_queue_once_with_its_namespace(store):
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.pending_approvals import PendingApprovals  # noqa: PLC0415

    def ask(state: Inner) -> dict[str, Any]:
        return {"x": state["x"] + int(interrupt("add one?"))}

    inner = StateGraph(Inner)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    outer = StateGraph(Inner)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    saver = HoldpointSaver(store)
    graph = outer.compile(checkpointer=saver)

    paused = graph.invoke({"x": 1}, thread("t"))
    runner = runner_for(store)
    runner.catch_up()
    items = PendingApprovals(runner.db).page().items
    runner.close()

    assert [item.interrupt_id for item in items] == [paused["__interrupt__"][0].id]
    assert items[0].node == "ask"
    assert items[0].namespace.startswith("sub:")


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


class CommandAfterItsTask(HoldpointSaver):
    """A saver whose Command writes (a resume) reach it only once the task that consumed
    the answer has handed over its own writes: LangGraph saves both from its pool of
    threads, the Command's submitted first."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.task_began = threading.Event()

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if task_id == NULL_TASK_ID:
            assert self.task_began.wait(WAIT)
        elif any(channel == "__resume__" for channel, _ in writes):
            self.task_began.set()
        super().put_writes(config, writes, task_id, task_path)


def test_a_resume_goes_on_record_before_the_node_that_consumed_it_when_saved_after_it(store):
    saver = CommandAfterItsTask(store)
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
    saver = CommandAfterItsTask(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread("t"))

    graph.invoke(Command(resume=True), thread("t", actor=REVIEWER, decision="approve"))

    assert names(saver, "t").count("InterruptResumed") == 1
    assert graph.get_state(thread("t")).values["log"] == ["reviewed: True", "paid 150"]
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
