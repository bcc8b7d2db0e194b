"""What HoldpointSaver records of a real LangGraph graph: given a graph compiled on it,
when it runs, then the catalogue's events, each carrying what an auditor needs."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from langgraph.checkpoint.holdpoint import HoldpointSaver
from tests.saver.langgraph_graphs import Refund, refund_builder, thread

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


def test_a_question_a_run_with_durability_exit_went_on_from_is_superseded_saying_so(store):
    # Given a thread paused at the first of two questions, a run of durability "exit"
    # saving no writes but its last checkpoint's (so no answer)
    def first(state: Refund) -> dict[str, Any]:
        return {"log": [f"first: {interrupt('first?')}"]}

    def second(state: Refund) -> dict[str, Any]:
        return {"log": [f"second: {interrupt('second?')}"]}

    builder = StateGraph(Refund)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    graph = builder.compile(checkpointer=HoldpointSaver(store))
    graph.invoke({"amount": 1, "log": []}, thread("t"), durability="exit")
    (asked,) = store.thread("t").interrupts

    # When it is answered, and the run stops at the second question
    graph.invoke(Command(resume="yes"), thread("t"), durability="exit")

    # Then the first is superseded, the record saying why, and only the second is pending,
    # as in LangGraph
    (superseded,) = events_of(HoldpointSaver(store), "t", "InterruptSuperseded")
    assert superseded.interrupt_id == asked
    assert 'durability="exit", which saves no answer' in superseded.reason
    pending = [record["value"] for record in store.thread("t").interrupts.values()]
    assert pending == [i.value for i in graph.get_state(thread("t")).interrupts] == ["second?"]


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
