"""Strict where LangGraph is silent: given a thread on HoldpointSaver, when a resume asks
what no pending interrupt can answer, or when a deletion is asked of the record, then a
clear error, the refusal on record, and nothing else recorded."""

from __future__ import annotations

import asyncio
import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.errors import UnknownInterruptError as LangGraphUnknownInterruptError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from domain.errors import (
    AmbiguousResumeError,
    HoldPointBypassError,
    HoldpointError,
    NotInterruptedError,
    QuestionAskedAgainError,
    RefusedRunError,
    SeparationOfDutiesError,
    UnknownInterruptError,
    WrongRoleError,
)
from domain.privacy.personal import Personal
from langgraph.checkpoint.holdpoint import AppendOnlyError, HoldpointSaver
from saver import write_order
from tests.saver.langgraph_graphs import refund_builder, thread

NOT_PENDING = "0123456789abcdef0123456789abcdef"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"  # a Command's writes


def kinds(store: Any, thread_id: str, name: str, after: int = 0) -> list[Any]:
    return [e for e in store.thread_events(thread_id)[after:] if type(e).__name__ == name]


def refusals(saver: HoldpointSaver) -> list[tuple[str | None, str]]:
    from domain.access.keyring import Keyring  # noqa: PLC0415

    return [(r.principal_id, r.reason) for r in Keyring(saver.store).refusals()]


class Fan(TypedDict):
    items: list[int]
    answers: Annotated[list[Any], operator.add]


def fan_out_graph() -> StateGraph[Fan]:
    """Two parallel tasks, each asking its own question."""

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answers": [interrupt({"item": state["item"]})]}

    builder = StateGraph(Fan)
    builder.add_node("ask", ask)
    builder.add_conditional_edges(
        START, lambda state: [Send("ask", {"item": i}) for i in state["items"]]
    )
    builder.add_edge("ask", END)
    return builder


def paused(saver: HoldpointSaver, thread_id: str = "t") -> Any:
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread(thread_id, actor={"id": "amy", "role": "agent"}))
    return graph


def counting_payments(saver: HoldpointSaver) -> tuple[Any, list[int]]:
    """The refund graph, and the amounts its pay step pays, run by run."""
    paid: list[int] = []

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        paid.append(state["amount"])
        return {"log": [f"paid {state['amount']}"]}

    return refund_builder(pay).compile(checkpointer=saver), paid


def paused_counting_payments(saver: HoldpointSaver) -> tuple[Any, list[int]]:
    """A refund paused at its question, and the amounts its pay step pays, run by run."""
    graph, paid = counting_payments(saver)
    graph.invoke({"amount": 150}, thread("t", actor={"id": "amy", "role": "agent"}))
    return graph, paid


def test_a_resume_write_naming_an_interrupt_that_is_not_pending_is_refused(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)
    config = graph.get_state(thread("t")).config
    before = len(store.thread_events("t"))

    with pytest.raises(UnknownInterruptError, match=NOT_PENDING):
        saver.put_writes(config, [("__resume__", {NOT_PENDING: True})], NULL_TASK_ID)

    assert len(store.thread_events("t")) == before
    assert refusals(saver)[-1][1] == "stale_interrupt"


def test_langgraphs_strict_resume_refuses_an_unknown_interrupt_before_any_node_runs(store):
    # LangGraph hands a resume map to the tasks and saves it nowhere: it is LangGraph's
    # strict resume (what Holdpoint's server sets for every run) that checks its ids.
    saver = HoldpointSaver(store)
    graph = paused(saver)
    before = len(store.thread_events("t"))

    with pytest.raises(LangGraphUnknownInterruptError):
        graph.invoke(Command(resume={NOT_PENDING: True}), thread("t", __pregel_strict_resume=True))

    assert len(store.thread_events("t")) == before


def test_one_value_for_several_pending_interrupts_is_refused(store):
    saver = HoldpointSaver(store)
    graph = fan_out_graph().compile(checkpointer=saver)
    graph.invoke({"items": [1, 2], "answers": []}, thread("t"))
    config = graph.get_state(thread("t")).config
    before = len(store.thread_events("t"))

    with pytest.raises(AmbiguousResumeError):
        saver.put_writes(config, [("__resume__", "yes")], NULL_TASK_ID)
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):  # LangGraph's own
        graph.invoke(Command(resume="yes"), thread("t"))

    assert len(store.thread_events("t")) == before
    assert refusals(saver)[-1][1] == "unknown_interrupt"


def test_a_resume_map_answers_each_pending_interrupt_it_names(store):
    saver = HoldpointSaver(store)
    graph = fan_out_graph().compile(checkpointer=saver)
    graph.invoke({"items": [1, 2], "answers": []}, thread("t"))
    pending = {record["value"]["item"]: i for i, record in store.thread("t").interrupts.items()}

    result = graph.invoke(Command(resume={pending[1]: "one", pending[2]: "two"}), thread("t"))

    assert sorted(result["answers"]) == ["one", "two"]
    answered = [
        e.interrupt_id for e in store.thread_events("t") if type(e).__name__ == "InterruptResumed"
    ]
    assert sorted(answered) == sorted(pending.values())


def test_a_resume_of_a_thread_with_nothing_pending_is_refused(store):
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 5}, thread("t"))
    graph.invoke(Command(resume=True), thread("t"))  # done: paid

    with pytest.raises(NotInterruptedError):
        saver.put_writes(graph.get_state(thread("t")).config, [("__resume__", True)], NULL_TASK_ID)


def test_of_two_racing_resumes_on_two_savers_the_second_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    first, second = HoldpointSaver(url), HoldpointSaver(url)
    paused(first)
    interrupt_id = next(iter(second.store.thread("t").interrupts))
    config = refund_builder().compile(checkpointer=second).get_state(thread("t")).config
    refund_builder().compile(checkpointer=first).invoke(Command(resume=True), thread("t"))

    with pytest.raises(UnknownInterruptError, match=interrupt_id):
        second.put_writes(config, [("__resume__", {interrupt_id: False})], NULL_TASK_ID)

    resumed = [e for e in first.store.thread_events("t") if type(e).__name__ == "InterruptResumed"]
    assert [e.resume for e in resumed] == [True]
    assert refusals(second)[-1][1] == "stale_interrupt"  # answered by the first, on record


def test_a_stale_tasks_answers_found_answered_at_the_commit_excuse_no_later_resume(tmp_path):
    # Given a second saver that read the thread paused, and the first that resumed it since
    url = f"sqlite:///{tmp_path / 'h.db'}"
    first, second = HoldpointSaver(url), HoldpointSaver(url)
    paused(first)
    state = refund_builder().compile(checkpointer=second).get_state(thread("t"))
    refund_builder().compile(checkpointer=first).invoke(Command(resume=True), thread("t"))
    # When the second saves a task's writes that consumed an answer (applied to the thread
    # it read, then again at the commit on the record, where the question is answered)
    second.put_writes(state.config, [("__resume__", [False]), ("log", ["no"])], state.tasks[0].id)

    # Then its Command's own resume of that question is refused and recorded, not taken
    # as the answer the task was first applied with
    before = len(first.store.thread_events("t"))
    with pytest.raises(NotInterruptedError):
        second.put_writes(state.config, [("__resume__", False)], NULL_TASK_ID)
    assert len(first.store.thread_events("t")) == before
    assert [e.resume for e in kinds(first.store, "t", "InterruptResumed")] == [True]
    assert refusals(second)[-1][1] == "stale_interrupt"


def racing_resume(
    tmp_path: Any, durability: str, *, asynchronous: bool = False
) -> tuple[HoldpointSaver, list[str], Any]:
    """A refund paused on one store; a second saver reads it paused and resumes it with
    False, while the first, in between, resumes it with True: (the first saver, the nodes
    the second's run ran, what the second's invoke raised)."""
    ran: list[str] = []

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        ran.append("pay")
        return {"log": [f"paid {state['amount']}"]}

    builder = refund_builder(pay)
    url = f"sqlite:///{tmp_path / 'h.db'}"
    first = HoldpointSaver(url)
    paused(first)

    class LosesTheRace(HoldpointSaver):
        raced = False

        def get_tuple(self, config: Any) -> Any:
            found = super().get_tuple(config)
            if not self.raced:  # the first answers between this read and the resume
                self.raced = True
                builder.compile(checkpointer=first).invoke(Command(resume=True), thread("t"))
                ran.clear()
            return found

    graph = builder.compile(checkpointer=LosesTheRace(url))
    resume = Command(resume=False)

    def run() -> None:
        if asynchronous:
            asyncio.run(graph.ainvoke(resume, thread("t"), durability=durability))
        else:
            graph.invoke(resume, thread("t"), durability=durability)

    with pytest.raises(HoldpointError) as raised:
        run()
    return first, ran, raised.value


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_run_whose_resume_lost_the_race_stops_at_the_node_it_answered(tmp_path, asynchronous):
    # Given a run resuming a question another process answered first, each of its
    # checkpoints saved before its next step (durability="sync")
    first, ran, raised = racing_resume(tmp_path, "sync", asynchronous=asynchronous)

    # Then LangGraph ran the node it answered (before the saver could refuse the
    # resume) and no node after it: the run's checkpoint after that node was refused
    assert isinstance(raised, RefusedRunError)
    assert ran == []
    assert refundable(first) == ["reviewed: True", "paid 150"]
    assert sorted(action for action, _ in refused_actions(first)) == ["Command(resume=...)", "put"]


def test_a_run_whose_resume_lost_the_race_records_nothing_of_what_it_ran_on(tmp_path):
    # Given the same, with LangGraph's default durability ("async": it runs the next
    # step while the checkpoint is saved)
    first, ran, _ = racing_resume(tmp_path, "async")

    # Then LangGraph ran on, and each save of the run after the node it answered was
    # refused and the refusal recorded: the thread's record is the first's answer
    assert ran == ["pay"]
    assert refundable(first) == ["reviewed: True", "paid 150"]
    assert sorted(action for action, _ in refused_actions(first)) == [
        "Command(resume=...)",
        "put",
        "put_writes",
    ]
    assert {reason for _, reason in refused_actions(first)} == {"stale_interrupt"}


def test_of_two_concurrent_resumes_through_one_saver_one_run_goes_on(store):
    # Given a paused refund whose pay step counts its runs
    paid: list[str] = []

    async def pay(state: dict[str, Any]) -> dict[str, Any]:
        paid.append(state["log"][-1])
        return {"log": ["paid"]}

    builder = refund_builder(pay)
    saver = HoldpointSaver(store)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"amount": 5, "log": []}, thread("t"))

    # When two runs resume it at once, with different answers
    async def both() -> list[Any]:
        runs = [
            graph.ainvoke(Command(resume=answer), thread("t"), durability="sync")
            for answer in ("yes", "no")
        ]
        return await asyncio.gather(*runs, return_exceptions=True)

    outcomes = asyncio.run(both())

    # Then one answer is on record and its run paid once; the other run stopped
    recorded = [e.resume for e in kinds(store, "t", "InterruptResumed")]
    assert len(recorded) == 1
    assert paid == [f"reviewed: {recorded[0]}"]
    assert sorted(type(outcome).__name__ for outcome in outcomes) == ["RefusedRunError", "dict"]
    assert len(kinds(store, "t", "ThreadCompleted")) == 1


def refundable(saver: HoldpointSaver) -> list[str]:
    """The refund thread's log, as a fresh saver on the same store reads it."""
    graph = refund_builder().compile(checkpointer=HoldpointSaver(saver.store))
    log: list[str] = graph.get_state(thread("t")).values["log"]
    return log


def first_refusal(raised: BaseException) -> BaseException:
    """What refused a run: LangGraph raises the first refusal it waits for, the
    Command's own or that of the step it led to (RefusedRunError, naming the first)."""
    return raised.refusal if isinstance(raised, RefusedRunError) else raised


def refused_actions(saver: HoldpointSaver) -> list[tuple[str, str]]:
    from domain.access.keyring import Keyring  # noqa: PLC0415

    return [(r.action, r.reason) for r in Keyring(saver.store).refusals()]


def test_a_named_actor_without_the_deciding_role_is_refused_and_the_record_says_so(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)

    with pytest.raises(WrongRoleError):
        graph.invoke(Command(resume=True), thread("t", actor={"id": "zed", "role": "agent"}))

    # In Python, LangGraph runs the node with the answer before it learns the saver
    # refused it (Holdpoint's server refuses first): the record shows the refusal, the
    # node's run, no answer, and the question still pending; nothing of the run after
    # the node is recorded (each of its saves refused, for the same reason).
    assert set(refusals(saver)) == {("zed", "wrong_role")}
    assert kinds(store, "t", "InterruptResumed") == []
    assert kinds(store, "t", "InterruptSuperseded") == []
    assert [e.node for e in kinds(store, "t", "NodeCompleted")][-1] == "review"
    assert store.thread("t").status == "interrupted"


def test_after_a_refused_answer_the_node_runs_on_the_answer_then_given(store):
    # Given an answer refused (an agent's), after LangGraph ran the node on it
    saver = HoldpointSaver(store)
    graph = paused(saver)
    asked = graph.get_state(thread("t")).config
    with pytest.raises(WrongRoleError):
        graph.invoke(Command(resume=True), thread("t", actor={"id": "zed", "role": "agent"}))

    # Then the node waits to run again (its writes on the refused answer are not kept),
    # and runs on the reviewer's answer, which is what the question's checkpoint holds
    assert graph.get_state(thread("t")).next == ("review",)
    reviewer = thread("t", actor={"id": "rita", "role": "reviewer"})
    assert graph.invoke(Command(resume=False), reviewer)["log"] == ["reviewed: False", "paid 150"]
    kept = [
        value for _, channel, value in saver.get_tuple(asked).pending_writes if channel == "log"
    ]
    assert kept == [["reviewed: False"]]
    [completed, _] = [e for e in kinds(store, "t", "NodeCompleted") if e.node == "review"]
    assert "may be answered by role 'reviewer'" in completed.task["refused"]


def test_a_resume_map_the_rules_refuse_stops_the_run_at_the_node_it_answered(store):
    # Given a paused thread, when an actor without the deciding role answers it with a
    # resume map (handed to the node, saved nowhere but in the node's own writes)
    saver = HoldpointSaver(store)
    graph = paused(saver)
    interrupt_id = next(iter(store.thread("t").interrupts))
    agent = thread("t", actor={"id": "zed", "role": "agent"})

    with pytest.raises(RefusedRunError, match="may be answered by role 'reviewer'"):
        graph.invoke(Command(resume={interrupt_id: True}), agent, durability="sync")

    # Then the node it answered ran, and the run stopped there: the question is pending
    assert [e.node for e in kinds(store, "t", "NodeCompleted")][-1] == "review"
    assert kinds(store, "t", "InterruptSuperseded") == []
    assert list(store.thread("t").interrupts) == [interrupt_id]
    assert set(refusals(saver)) == {("zed", "wrong_role")}


def test_an_agents_edit_of_a_paused_thread_is_refused_on_record_and_nothing_else(store):
    # Given a refund paused at its question
    saver = HoldpointSaver(store)
    graph = paused(saver)
    before = len(store.thread_events("t"))

    # When an agent edits the amount the question is about, in Python
    with pytest.raises(HoldPointBypassError, match="stands at a hold point"):
        graph.update_state(thread("t", actor={"id": "zed", "role": "agent"}), {"amount": 1})

    # Then only the refusal is recorded, as for a native graph
    assert len(store.thread_events("t")) == before
    assert graph.get_state(thread("t")).values["amount"] == 150
    assert refusals(saver)[-1] == ("zed", "hold_point")


def test_an_answer_does_not_go_to_a_question_asked_again_after_an_edit(store):
    # Given a refund of 150 paused at its question, whose amount a reviewer then edits
    # (LangGraph's node will ask again when the thread goes on, about the new amount)
    saver = HoldpointSaver(store)
    graph, paid = paused_counting_payments(saver)
    (asked,) = store.thread("t").interrupts
    graph.update_state(thread("t", actor={"id": "rob", "role": "reviewer"}), {"amount": 90_000})

    # When another reviewer resumes it, in Python: LangGraph would hand the answer to
    # the question the node asks again, which she was not shown
    rita = thread("t", actor={"id": "rita", "role": "reviewer"}, decision="approve")
    with pytest.raises(HoldpointError, match="edited since") as refused:
        graph.invoke(Command(resume=True), rita, durability="sync")
    assert isinstance(first_refusal(refused.value), QuestionAskedAgainError)

    # Then her answer is refused on record and nothing is paid; the question stays as
    # it was shown
    assert paid == []
    assert kinds(store, "t", "InterruptResumed") == []
    assert list(store.thread("t").interrupts) == [asked]
    assert refusals(saver)[-1] == ("rita", "question_changed")
    # and once the thread goes on, the node asks anew, about the new amount, which she
    # then decides
    asked_again = graph.invoke(None, thread("t", actor={"id": "amy", "role": "agent"}))
    [again] = asked_again["__interrupt__"]
    assert again.value["amount"] == 90_000
    assert list(store.thread("t").interrupts) == [again.id]
    graph.invoke(Command(resume=True), rita, durability="sync")
    assert paid == [90_000]
    (resumed,) = kinds(store, "t", "InterruptResumed")
    assert (resumed.interrupt_id, resumed.actor["id"]) == (again.id, "rita")
    assert store.verify_chain("t").ok


@pytest.mark.parametrize("at_rest", ["a new thread", "a paid refund"])
def test_a_reviewers_command_update_at_no_hold_point_is_refused_as_for_a_native_graph(
    store, at_rest
):
    # Given a thread standing at no hold point
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)
    if at_rest == "a paid refund":
        graph.invoke({"amount": 150}, thread("t", actor={"id": "amy", "role": "agent"}))
        graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    before = len(store.thread_events("t"))

    # When a reviewer sends a Command that changes it (a role that decides, not one that
    # feeds threads: so a native graph and the HTTP API refuse it)
    with pytest.raises(HoldpointError, match="needs role agent or admin") as refused:
        graph.invoke(
            Command(update={"amount": 9}),
            thread("t", actor={"id": "rob", "role": "reviewer"}),
            durability="sync",
        )
    assert isinstance(first_refusal(refused.value), WrongRoleError)

    # Then the refusal is recorded, and no edit
    assert kinds(store, "t", "StateEdited", after=before) == []
    assert ("rob", "wrong_role") in refusals(saver)


def test_an_agents_command_update_of_a_paused_thread_is_refused_and_its_run_stops(store):
    # Given a refund paused at its question
    saver = HoldpointSaver(store)
    graph = paused(saver)
    (asked,) = store.thread("t").interrupts.values()

    # When an agent sends a Command that changes the amount (LangGraph then runs the node
    # again, which asks again, about the changed amount)
    agent = thread("t", actor={"id": "zed", "role": "agent"})
    with pytest.raises(HoldPointBypassError, match="Command\\(update"):
        graph.invoke(Command(update={"amount": 1}), agent, durability="sync")

    # Then the refusal is recorded, and neither the edit nor the question asked again
    assert kinds(store, "t", "StateEdited") == []
    assert [record["value"] for record in store.thread("t").interrupts.values()] == [asked["value"]]
    assert graph.get_state(thread("t")).values["amount"] == 150
    assert set(refusals(saver)) == {("zed", "hold_point")}


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_agents_command_goto_past_a_paused_question_is_refused_and_paid_once_on_record(
    store, durability
):
    # Given a refund paused at its question, whose pay step counts its runs
    saver = HoldpointSaver(store)
    graph, paid = paused_counting_payments(saver)

    # When an agent sends the thread straight to the pay step (LangGraph runs it at once,
    # in this process, before the saver sees the Command)
    agent = thread("t", actor={"id": "zed", "role": "agent"})
    with pytest.raises(HoldPointBypassError, match="Command\\(goto"):
        graph.invoke(Command(goto="pay"), agent, durability=durability)

    # Then the refusal is recorded (and the run's later saves refused: the question asked
    # again), the route is not, and the step that ran is recorded as run on the refusal:
    # nothing of it is kept
    assert ("Command(goto=...)", "hold_point") in refused_actions(saver)
    assert {reason for _, reason in refused_actions(saver)} == {"hold_point"}
    assert kinds(store, "t", "StateEdited") == []
    (ran,) = [e for e in kinds(store, "t", "NodeCompleted") if e.node == "pay"]
    assert "routes the thread to 'pay', where the graph does not start it" in ran.task["refused"]
    assert graph.get_state(thread("t")).next == ("review",)

    # And when the reviewer approves, the refund is paid once on record
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    assert refundable(saver) == ["reviewed: True", "paid 150"]
    assert paid == [150, 150]  # in this process, once before the saver refused the goto


def test_an_agents_command_goto_at_a_paused_question_needs_who_may_decide_it(store):
    # Given a refund paused at its question
    saver = HoldpointSaver(store)
    graph = paused(saver)
    (asked,) = store.thread("t").interrupts

    # When an agent sends it to where the graph starts (the review: asked again)
    agent = thread("t", actor={"id": "zed", "role": "agent"})
    with pytest.raises(HoldPointBypassError, match=r"Command\(goto=\.\.\.\) needs a principal"):
        graph.invoke(Command(goto="review"), agent, durability="sync")

    # Then only the refusal is recorded: the question stands as it was asked
    assert ("Command(goto=...)", "hold_point") in refused_actions(saver)
    assert kinds(store, "t", "StateEdited") == []
    assert list(store.thread("t").interrupts) == [asked]


def test_a_refused_command_is_named_by_what_it_did(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)

    agent = thread("t", actor={"id": "zed", "role": "agent"})
    with pytest.raises(HoldPointBypassError):
        graph.invoke(Command(update={"amount": 1}, goto="pay"), agent, durability="sync")

    assert ("Command(update=..., goto=...)", "hold_point") in refused_actions(saver)


@pytest.mark.parametrize("role", ["agent", "reviewer", "admin"])
def test_a_command_goto_past_the_approval_on_a_thread_at_rest_is_refused_on_record(store, role):
    # Given a refund approved and paid
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))

    # When a named actor sends it straight to the pay step (past the review, where the
    # graph never starts it): whatever the role, the flow is decided by an edit as_node
    with pytest.raises((HoldPointBypassError, RefusedRunError), match="does not start it"):
        graph.invoke(Command(goto="pay"), thread("t", actor={"id": "zed", "role": role}))

    # Then the refusal is recorded, and the refund is paid once on record
    assert ("Command(goto=...)", "hold_point") in refused_actions(saver)
    assert kinds(store, "t", "StateEdited") == []
    assert refundable(saver) == ["reviewed: True", "paid 150"]


def test_in_python_a_goto_on_a_thread_with_no_start_on_record_is_refused(store):
    # Given a saver that cannot see the graph's edges, and a thread not started yet
    saver = HoldpointSaver(store)
    graph = refund_builder().compile(checkpointer=saver)

    # When an agent starts it with a goto, even to where the graph would start it
    agent = thread("t", actor={"id": "zed", "role": "agent"})
    with pytest.raises(
        (HoldPointBypassError, RefusedRunError), match="it starts at no node a goto may name"
    ):
        graph.invoke(Command(update={"amount": 5}, goto="review"), agent)

    # Then it is refused on record (a server tells the saver its graph's edges; Python
    # names the first step by input), and nothing of its run: not the checkpoint
    # LangGraph begins the thread with, which holds the goto (a later run went on to it)
    assert ("Command(update=..., goto=...)", "hold_point") in refused_actions(saver)
    assert store.thread_events("t") == []


def test_a_command_goto_where_the_graph_starts_asks_the_question_again(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))

    agent = thread("t", actor={"id": "zed", "role": "agent"})
    graph.invoke(Command(goto="review"), agent)

    assert refused_actions(saver) == []
    (edited,) = kinds(store, "t", "StateEdited")
    assert edited.next == ["review"]
    assert store.thread("t").status == "interrupted"


def after_the_decision(graph: Any) -> dict[str, Any]:
    """The refund's checkpoint between the reviewer's answer and the pay step."""
    (past,) = [s for s in graph.get_state_history(thread("t")) if s.next == ("pay",)]
    return dict(past.config["configurable"])


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_agents_run_from_a_checkpoint_past_a_decision_is_refused_on_record(store, durability):
    # Given a refund approved and paid, whose pay step counts its runs
    saver = HoldpointSaver(store)
    graph, paid = paused_counting_payments(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    before = len(store.thread_events("t"))

    # When an agent runs it again from the checkpoint after the reviewer's answer (it
    # would pay again under that answer)
    agent = {**after_the_decision(graph), "actor": {"id": "zed", "role": "agent"}}
    began = time.monotonic()
    with pytest.raises(HoldPointBypassError, match="a fork there would run under that decision"):
        graph.invoke(None, {"configurable": agent}, durability=durability)

    # Then the run is refused at once: the pay step's writes, handed over as the fork was
    # refused, do not wait for the fork's checkpoint, which never comes
    assert time.monotonic() - began < write_order.TIMEOUT / 2
    # and the refusal is recorded and nothing of the run: the thread is as it was
    # (LangGraph ran the pay step in this process before the saver refused the branch)
    assert len(store.thread_events("t")) == before
    assert ("fork", "hold_point") in refused_actions(saver)
    assert {reason for _, reason in refused_actions(saver)} == {"hold_point"}
    assert refundable(saver) == ["reviewed: True", "paid 150"]
    assert len(paid) == 2


def test_the_reviewer_may_run_from_a_checkpoint_past_their_decision(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))

    reviewer = {**after_the_decision(graph), "actor": {"id": "rita", "role": "reviewer"}}
    graph.invoke(None, {"configurable": reviewer})

    assert refundable(saver) == ["reviewed: True", "paid 150"]
    assert refused_actions(saver) == []


def test_an_agents_edit_from_a_checkpoint_past_a_decision_is_refused_on_record(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    before = len(store.thread_events("t"))

    agent = {**after_the_decision(graph), "actor": {"id": "zed", "role": "agent"}}
    with pytest.raises(HoldPointBypassError, match="a fork there would run under that decision"):
        graph.update_state({"configurable": agent}, {"amount": 1_000_000})

    assert len(store.thread_events("t")) == before
    assert refused_actions(saver) == [("update_state", "hold_point")]


def test_an_agents_edit_as_a_node_is_a_decision_about_the_flow_and_refused(store):
    # Given a refund run to its end
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    before = len(store.thread_events("t"))

    # When an agent edits it as the review node (standing in for a review)
    agent = thread("t", actor={"id": "zed", "role": "agent"}, as_node="review")
    with pytest.raises(HoldPointBypassError, match="decision about the flow"):
        graph.update_state(agent, {"amount": 1}, as_node="review")

    # Then only the refusal is recorded
    assert len(store.thread_events("t")) == before
    assert refusals(saver)[-1] == ("zed", "hold_point")


def test_an_agents_edit_as_start_is_input_and_the_question_is_asked_again(store):
    # Given a refund approved and paid
    saver = HoldpointSaver(store)
    graph = paused(saver)
    graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))

    # When an agent edits it as START (input, as the native engine takes it) and runs it
    agent = thread("t", actor={"id": "zed", "role": "agent"}, as_node="__start__")
    graph.update_state(agent, {"amount": 70}, as_node="__start__")
    graph.invoke(None, thread("t", actor={"id": "zed", "role": "agent"}))

    # Then nothing is refused, and the review asks about the new amount before any payment
    assert refused_actions(saver) == []
    (pending,) = store.thread("t").interrupts.values()
    assert pending["value"]["amount"] == 70
    assert refundable(saver) == ["reviewed: True", "paid 150"]


@pytest.mark.parametrize("role", ["agent", "reviewer"])
def test_a_named_actors_run_of_durability_exit_past_a_question_is_refused_on_record(store, role):
    # Given a refund paused at its question
    saver = HoldpointSaver(store)
    graph, paid = paused_counting_payments(saver)
    (asked,) = store.thread("t").interrupts

    # When a named actor answers it in a run of durability "exit", which saves no
    # writes, its answer among them: with the reviewer's role, or without it
    with pytest.raises(HoldPointBypassError, match='durability="exit", which saves no answer'):
        graph.invoke(
            Command(resume=True),
            thread("t", actor={"id": "zed", "role": role}),
            durability="exit",
        )

    # Then no decision could be on record, so the question stays pending on record, the
    # refusal recorded, nothing superseded; LangGraph ran the run before its one save
    assert list(store.thread("t").interrupts) == [asked]
    assert ("put", "hold_point") in refused_actions(saver)
    assert kinds(store, "t", "InterruptSuperseded") == []
    assert paid == [150]
    assert refundable(saver) == []


@pytest.mark.parametrize("thread_state", ["paid", "new"])
def test_a_named_actors_command_in_a_run_of_durability_exit_is_refused_on_record(
    store, thread_state
):
    # Given a refund approved and paid, or no thread yet
    saver = HoldpointSaver(store)
    graph, paid = (
        paused_counting_payments(saver) if thread_state == "paid" else counting_payments(saver)
    )
    if thread_state == "paid":
        graph.invoke(Command(resume=True), thread("t", actor={"id": "rita", "role": "reviewer"}))
    before = len(store.thread_events("t"))

    # When an agent sends it to pay with durability "exit", which saves no Command: its
    # goto could not be held to the rules (LangGraph runs it before the one save)
    with pytest.raises(HoldPointBypassError, match="began with no new input"):
        graph.invoke(
            Command(goto="pay", update={"amount": 70}),
            thread("t", actor={"id": "zed", "role": "agent"}),
            durability="exit",
        )

    # Then only the refusal is recorded: the record pays at most the approved refund once
    assert len(store.thread_events("t")) == before
    assert ("put", "hold_point") in refused_actions(saver)
    recorded = [e.node for e in kinds(store, "t", "NodeCompleted")].count("pay")
    assert recorded == (1 if thread_state == "paid" else 0)
    assert len(paid) == recorded + 1  # LangGraph ran it in this process before the save


def test_new_input_in_a_run_of_durability_exit_supersedes_the_question_as_in_sync(store):
    # Given a refund paused at its question
    saver = HoldpointSaver(store)
    graph = paused(saver)

    # When an agent starts the thread again with new input, in a run of durability "exit"
    agent = thread("t", actor={"id": "zed", "role": "agent"})
    graph.invoke({"amount": 70}, agent, durability="exit")

    # Then, as with "sync", the question is superseded and asked again about the new input
    assert refused_actions(saver) == []
    assert len(kinds(store, "t", "InterruptSuperseded")) == 1
    (pending,) = store.thread("t").interrupts.values()
    assert pending["value"]["amount"] == 70


def test_the_starter_may_not_answer_its_own_thread(store):
    saver = HoldpointSaver(store)
    graph = paused(saver)

    with pytest.raises(SeparationOfDutiesError):
        graph.invoke(Command(resume=True), thread("t", actor={"id": "amy", "role": "reviewer"}))

    assert refusals(saver)[-1] == ("amy", "separation_of_duties")


@pytest.mark.parametrize(
    "delete",
    [
        lambda saver: saver.delete_thread("t"),
        lambda saver: saver.delete_for_runs(["r"]),
        lambda saver: saver.prune(["t"]),
    ],
    ids=["delete_thread", "delete_for_runs", "prune"],
)
def test_deleting_or_pruning_is_refused_and_the_thread_stays(store, delete):
    saver = HoldpointSaver(store)
    paused(saver)
    before = len(store.thread_events("t"))

    with pytest.raises(AppendOnlyError, match="append-only"):
        delete(saver)

    assert len(store.thread_events("t")) == before
    assert saver.get_tuple(thread("t")) is not None


@pytest.mark.parametrize("method", ["put_writes", "aput_writes"])
def test_a_subclass_whose_writes_take_no_task_path_is_refused_when_defined(method):
    # LangGraph hands a task's path only to a saver whose put_writes takes one; without
    # it the record could not name the node that wrote (it recorded "?"), and every step
    # waited out the write order's grace for the writes it could not recognise.
    def without_path(self: Any, config: Any, writes: Any, task_id: str) -> None: ...

    with pytest.raises(TypeError, match=f"Logged.{method} must take task_path"):
        type("Logged", (HoldpointSaver,), {method: without_path})

    def passing_it_on(
        self: Any, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None: ...

    assert issubclass(type("Logged", (HoldpointSaver,), {method: passing_it_on}), HoldpointSaver)


def test_a_real_graph_takes_no_personal_data_declaration_and_records_values_as_they_are():
    # LangGraph's compile has no `personal`: the declaration is the native engine's
    with pytest.raises(TypeError, match="personal"):
        refund_builder().compile(
            checkpointer=HoldpointSaver(), personal=Personal(subject="metadata:customer")
        )
    # So a real graph's values are recorded as they are
    saver = HoldpointSaver()
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 250.0}, thread("as-they-are"))
    stored = [e.__dict__ for e in saver.store.thread_events("as-they-are")]
    assert "_personal_" not in repr(stored)
    assert "250.0" in repr(stored)
