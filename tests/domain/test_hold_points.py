"""Hold points through the Python API: the attacks of issue 19, each refused or harmless.

A Python caller names its actor in the config; the rules apply to that actor as they
do to an API key's principal (domain/oversight/hold_points.py). Each refusal records its
AccessRefused and nothing else.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from domain.access.keyring import Keyring
from domain.errors import (
    DecisionContradictionError,
    HoldPointBypassError,
    InvalidThreadIdError,
    InvalidUpdateError,
    QuestionChangedError,
    ReasonRequiredError,
    RepeatedApprovalError,
    SeparationOfDutiesError,
    ThreadInterruptedError,
    WrongRoleError,
)
from domain.graph import CompiledStateGraph
from domain.history.forks import fork_at_version
from domain.history.time_travel import versions
from domain.oversight.hold_points import question_digest
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
from tests.graphs import linear_graph, refund_graph

AMY = {"id": "amy", "role": "agent"}
ANN = {"id": "ann", "role": "agent"}
RITA = {"id": "rita", "role": "reviewer"}
ROB = {"id": "rob", "role": "reviewer"}
ADA = {"id": "ada", "role": "admin"}
QUESTION = {"question": "Approve a $250.0 refund?"}


class Threshold(TypedDict):
    refund_amount: float
    outcome: str


def check_and_process(state: Threshold) -> dict[str, Any]:
    amount = state["refund_amount"]
    if amount > 100 and not interrupt({"question": f"Approve a ${amount} refund?"}):
        return {"outcome": "Refund denied by reviewer."}
    return {"outcome": f"Refund of ${amount} processed."}


def threshold_graph(store: Workflows, approvals: int | None = None) -> CompiledStateGraph:
    """Seed (b): one node that asks above $100 and processes the refund."""

    def ask_and_process(state: Threshold) -> dict[str, Any]:
        amount = state["refund_amount"]
        if amount > 100:
            approved = interrupt({"question": f"Approve a ${amount} refund?"}, approvals=approvals)
            if not approved:
                return {"outcome": "Refund denied by reviewer."}
        return {"outcome": f"Refund of ${amount} processed."}

    return linear_graph(store, Threshold, ask_and_process, name="refund")


def config(thread_id: str = "t1", actor: dict[str, Any] | None = None, **more: Any) -> Any:
    configurable = {"thread_id": thread_id, **more}
    if actor is not None:
        configurable["actor"] = actor
    return {"configurable": configurable}


def refusals(store: Workflows) -> list[tuple[str | None, str]]:
    return [(r.principal_id, r.reason) for r in Keyring(store).refusals(limit=1000)]


def event_names(store: Workflows, thread_id: str = "t1") -> list[str]:
    return [type(e).__name__ for e in store.thread_events(thread_id)]


@pytest.fixture
def paused(store: Workflows) -> CompiledStateGraph:
    """Thread t1 of the threshold graph, started by amy, paused on "Approve a $250.0 refund?"."""
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 250.0}, config(actor=AMY))
    return graph


def pending_id(graph: CompiledStateGraph, thread_id: str = "t1") -> str:
    [pending] = graph.get_state(config(thread_id)).interrupts
    return pending.id


# -- (a) an edit of what the question is about ------------------------------


def test_an_agent_may_not_edit_a_paused_thread(store, paused):
    # Given
    before = event_names(store)

    # When
    with pytest.raises(HoldPointBypassError, match="stands at a hold point") as refused:
        paused.update_state(config(actor=AMY), {"refund_amount": 250000.0})

    # Then only the refusal is recorded
    assert "principal 'amy' has role 'agent'" in str(refused.value)
    assert event_names(store) == before
    assert refusals(store) == [("amy", "hold_point")]


def test_an_answer_does_not_apply_to_a_question_edited_since(store, paused):
    # Given a reviewer edits the amount, and another approves what the inbox showed
    shown = pending_id(paused)
    paused.update_state(config(actor=ROB), {"refund_amount": 250000.0})

    # When
    result = paused.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    # Then the node asks anew about the new amount; nothing is processed
    assert "outcome" not in result
    [asked] = result["__interrupt__"]
    assert asked.value == {"question": "Approve a $250000.0 refund?"}
    raised = [e for e in store.thread_events("t1") if isinstance(e, WorkflowThread.InterruptRaised)]
    assert [e.interrupt_id for e in raised] == [shown, asked.id]
    assert raised[1].reasked == shown
    resumed = next(e for e in store.thread_events("t1") if type(e).__name__ == "InterruptResumed")
    assert resumed.digest == question_digest(QUESTION)


def test_the_new_question_is_decided_on_its_own(store, paused):
    # Given
    paused.update_state(config(actor=ROB), {"refund_amount": 300.0})
    paused.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    # When the new question is answered
    result = paused.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    # Then the node runs with that answer
    assert result["outcome"] == "Refund of $300.0 processed."
    [completed] = [e for e in store.thread_events("t1") if type(e).__name__ == "NodeCompleted"][-1:]
    [applied] = completed.applied
    assert applied["digest"] == question_digest({"question": "Approve a $300.0 refund?"})


def test_a_decision_made_on_another_payload_is_refused(store, paused):
    # When the decider saw a payload other than the recorded one
    other = question_digest({"question": "Approve a $25.0 refund?"})
    with pytest.raises(QuestionChangedError) as refused:
        paused.invoke(Command(resume=True), config(actor=RITA, payload_digest=other))

    # Then it names both digests, and only the refusal is recorded
    assert other in str(refused.value)
    assert question_digest(QUESTION) in str(refused.value)
    assert event_names(store)[-1] == "InterruptRaised"
    assert refusals(store) == [("rita", "question_changed")]


# -- (b) an edit as_node stands in for a node having run -------------------


def created(store: Workflows, actor: dict[str, Any]) -> CompiledStateGraph:
    """A new refund_approval thread t1 that has not run (as POST /threads records one)."""
    graph = refund_graph(store)
    store.record(graph.start_thread("t1", {}, actor))
    return graph


def test_an_agent_may_not_edit_as_a_node(store):
    # Given a new refund_approval thread
    graph = created(store, AMY)
    before = event_names(store)

    # When
    with pytest.raises(HoldPointBypassError, match="decision about the flow"):
        graph.update_state(config(actor=AMY), {"approved": True}, as_node="request_approval")

    # Then
    assert event_names(store) == before
    assert refusals(store) == [("amy", "hold_point")]


def test_an_edit_as_a_node_needs_a_reason(store):
    graph = created(store, AMY)

    with pytest.raises(ReasonRequiredError, match="give its reason"):
        graph.update_state(config(actor=RITA), {"approved": True}, as_node="request_approval")


def test_an_edit_as_a_node_by_a_reviewer_is_recorded_as_a_decision(store):
    # Given
    graph = created(store, AMY)

    # When
    graph.update_state(
        config(actor=RITA, reason="Approved by phone"),
        {"approved": True},
        as_node="request_approval",
    )

    # Then
    edit = store.thread_events("t1")[-1]
    assert isinstance(edit, WorkflowThread.StateEdited)
    assert (edit.decision, edit.reason, edit.actor["id"]) == ("edit", "Approved by phone", "rita")
    assert edit.separation_of_duties is True
    assert graph.get_state(config()).next == ("process_refund",)


def test_the_starter_may_not_edit_its_thread_as_a_node(store):
    graph = created(store, ADA)

    with pytest.raises(SeparationOfDutiesError, match="started thread 't1'"):
        graph.update_state(
            config(actor=ADA, reason="mine"), {"approved": True}, as_node="request_approval"
        )


# -- (c) a fork past an approval --------------------------------------------


@pytest.fixture
def approved_checkpoint(store: Workflows) -> tuple[CompiledStateGraph, str, int]:
    """refund_approval t1: asked, approved by rita, paid; the checkpoint between the two."""
    graph = refund_graph(store)
    graph.invoke({"refund_amount": 250.0, "approved": False}, config(actor=AMY))
    graph.invoke(Command(resume=True), config(actor=RITA, decision="approve"))
    history = list(graph.get_state_history(config()))
    [between] = [h for h in history if h.next == ("process_refund",)]
    checkpoint = between.config["configurable"]["checkpoint_id"]
    version = next(v.version for v in versions(store, "t1") if v.checkpoint_id == checkpoint)
    return graph, checkpoint, version


def test_an_agent_may_not_fork_past_an_approval_with_new_values(store, approved_checkpoint):
    graph, checkpoint, _ = approved_checkpoint

    with pytest.raises(HoldPointBypassError, match="would run under that decision"):
        graph.update_state(config(actor=AMY, checkpoint_id=checkpoint), {"refund_amount": 250000.0})

    assert store.thread("t1~6") is None
    assert refusals(store) == [("amy", "hold_point")]


def test_an_agent_may_not_run_on_from_past_an_approval(store, approved_checkpoint):
    graph, checkpoint, _ = approved_checkpoint

    with pytest.raises(HoldPointBypassError):
        graph.invoke(None, config(actor=AMY, checkpoint_id=checkpoint))

    assert refusals(store) == [("amy", "hold_point")]


def test_an_agent_may_not_fork_past_an_approval_by_version(store, approved_checkpoint):
    _, _, version = approved_checkpoint

    with pytest.raises(HoldPointBypassError):
        fork_at_version(store, "t1", version, AMY, new_thread_id="t1-b")

    assert store.thread("t1-b") is None
    assert refusals(store) == [("amy", "hold_point")]


def test_a_fork_from_before_the_answer_asks_again(store):
    # Given the paused checkpoint of an approved thread
    graph = refund_graph(store)
    graph.invoke({"refund_amount": 250.0, "approved": False}, config(actor=AMY))
    graph.invoke(Command(resume=True), config(actor=RITA, decision="approve"))
    paused_at = next(
        h for h in graph.get_state_history(config()) if h.next == ("request_approval",)
    )

    # When an agent forks there with new values
    fork = graph.update_state(
        {"configurable": {**paused_at.config["configurable"], "actor": AMY}},
        {"refund_amount": 250000.0},
    )
    result = graph.invoke(None, {"configurable": {**fork["configurable"], "actor": AMY}})

    # Then the fork asks about the new amount: a new pending approval
    assert result["__interrupt__"][0].value == {"question": "Approve a $250000.0 refund?"}
    assert result["approved"] is False


# -- (d) the decision's kind is the truth -----------------------------------


def test_a_reject_that_resumes_with_true_is_refused(store, paused):
    with pytest.raises(DecisionContradictionError, match="'reject' resumes with false, not true"):
        paused.invoke(Command(resume=True), config(actor=RITA, decision="reject"))

    assert event_names(store)[-1] == "InterruptRaised"


def test_an_interrupt_can_declare_what_approve_resumes_with(store):
    # Given
    def review(state: Threshold) -> dict[str, Any]:
        answer = interrupt({"draft": "x"}, decision_values={"approve": "ok", "reject": "no"})
        return {"outcome": answer}

    graph = linear_graph(store, Threshold, review)
    graph.invoke({"refund_amount": 1.0}, config(actor=AMY))

    # Then approve with its declared value is accepted, with True it is not
    with pytest.raises(DecisionContradictionError):
        graph.invoke(Command(resume=True), config(actor=RITA, decision="approve"))
    result = graph.invoke(Command(resume="ok"), config(actor=RITA, decision="approve"))
    assert result["outcome"] == "ok"


def test_an_unknown_decision_is_refused(store, paused):
    with pytest.raises(InvalidUpdateError, match="Unknown decision 'yes'"):
        paused.invoke(Command(resume=True), config(actor=RITA, decision="yes"))


# -- (e) separation of duties covers who shaped the question -----------------


@pytest.fixture
def fed_by_ada(store: Workflows) -> CompiledStateGraph:
    """t1 started by amy (a small refund, done), then paused on ada's input of $250."""
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 5.0}, config(actor=AMY))
    graph.invoke({"refund_amount": 250.0}, config(actor=ADA))
    return graph


def test_whoever_sent_the_input_may_not_decide(store, fed_by_ada):
    with pytest.raises(SeparationOfDutiesError, match="'ada' sent input to thread 't1'"):
        fed_by_ada.invoke(Command(resume=True), config(actor=ADA, decision="approve"))

    assert refusals(store) == [("ada", "separation_of_duties")]


def test_the_starter_may_not_decide_even_as_admin(store):
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 250.0}, config(actor=ADA))

    with pytest.raises(SeparationOfDutiesError, match="started thread 't1'"):
        graph.invoke(Command(resume=True), config(actor=ADA, decision="approve"))


def test_whoever_edited_the_state_may_not_decide(store, paused):
    paused.update_state(config(actor=ROB), {"refund_amount": 200.0})
    paused.invoke(Command(resume=True), config(actor=RITA, decision="approve"))  # asks anew

    with pytest.raises(SeparationOfDutiesError, match="'rob' edited the state of thread 't1'"):
        paused.invoke(Command(resume=True), config(actor=ROB, decision="approve"))


def test_whoever_forked_a_thread_may_not_decide_its_interrupts(store, paused):
    # Given rob forks t1 while it is paused: the interrupt is raised again on the fork
    version = len(store.thread_events("t1"))
    result = fork_at_version(store, "t1", version, ROB, new_thread_id="t1-b")

    # Then
    with pytest.raises(SeparationOfDutiesError, match="forked thread 't1-b'"):
        paused.invoke(Command(resume=True), config("t1-b", actor=ROB, decision="approve"))
    with pytest.raises(SeparationOfDutiesError, match="'amy' sent input to thread 't1'"):
        paused.invoke(Command(resume=True), config("t1-b", actor={**AMY, "role": "admin"}))
    done = paused.invoke(Command(resume=True), config("t1-b", actor=RITA, decision="approve"))
    assert done["outcome"] == "Refund of $250.0 processed."
    assert result.reraised


def test_separation_of_duties_is_recorded_and_can_be_turned_off_per_graph(store, fed_by_ada):
    # Given
    fed_by_ada.set_oversight(separation_of_duties=False)

    # When
    result = fed_by_ada.invoke(Command(resume=True), config(actor=ADA, decision="approve"))

    # Then
    assert result["outcome"] == "Refund of $250.0 processed."
    resumed = [e for e in store.thread_events("t1") if type(e).__name__ == "InterruptResumed"]
    assert resumed[-1].separation_of_duties is False


def test_a_role_that_may_not_decide_is_refused(store, paused):
    with pytest.raises(WrongRoleError, match="may be answered by role 'reviewer'"):
        paused.invoke(Command(resume=True), config(actor=ANN, decision="approve"))


# -- four eyes -----------------------------------------------------------------


@pytest.fixture
def four_eyes(store: Workflows) -> CompiledStateGraph:
    graph = threshold_graph(store, approvals=2)
    graph.invoke({"refund_amount": 250.0}, config(actor=AMY))
    return graph


def test_a_first_approval_of_two_leaves_the_interrupt_pending(store, four_eyes):
    result = four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    assert "outcome" not in result
    assert event_names(store)[-1] == "InterruptApproved"
    approved = store.thread_events("t1")[-1]
    assert (approved.approvals, approved.needed, approved.actor["id"]) == (1, 2, "rita")
    assert store.thread("t1").interrupts[pending_id(four_eyes)]["approved_by"] == [
        {"id": "rita", "role": "reviewer"}
    ]


def test_the_same_principal_may_not_approve_twice(store, four_eyes):
    four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    with pytest.raises(RepeatedApprovalError, match="already approved"):
        four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    assert refusals(store) == [("rita", "four_eyes")]


def test_the_second_approval_resumes_the_thread(store, four_eyes):
    four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    result = four_eyes.invoke(Command(resume=True), config(actor=ROB, decision="approve"))

    assert result["outcome"] == "Refund of $250.0 processed."
    assert event_names(store)[-4:-1] == ["InterruptApproved", "InterruptResumed", "NodeCompleted"]


def test_a_rejection_by_either_ends_the_question(store, four_eyes):
    four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="approve"))

    result = four_eyes.invoke(Command(resume=False), config(actor=ROB, decision="reject"))

    assert result["outcome"] == "Refund denied by reviewer."


def test_four_eyes_takes_only_approve_or_reject(store, four_eyes):
    with pytest.raises(InvalidUpdateError, match="decide approve or reject, not 'edit'"):
        four_eyes.invoke(Command(resume=True), config(actor=RITA, decision="edit"))


def test_a_graph_can_need_two_approvals_by_default(store):
    graph = threshold_graph(store)
    graph.set_oversight(approvals=2)
    graph.invoke({"refund_amount": 250.0}, config(actor=AMY))

    raised = store.thread_events("t1")[-1]

    assert raised.approvals == 2


# -- a run's command at a hold point ----------------------------------------


def test_an_agent_command_at_a_hold_point_is_refused(store, paused):
    with pytest.raises(HoldPointBypassError, match=r"A Command\(update=..., goto=...\)"):
        paused.invoke(
            Command(update={"refund_amount": 1.0}, goto="ask_and_process"), config(actor=AMY)
        )

    assert refusals(store) == [("amy", "hold_point")]


def test_a_reviewer_command_at_a_hold_point_is_told_to_resume(store, paused):
    with pytest.raises(ThreadInterruptedError):
        paused.invoke(Command(update={"refund_amount": 1.0}), config(actor=RITA))


def test_a_resume_may_not_also_goto(store, paused):
    with pytest.raises(InvalidUpdateError, match="cannot also goto"):
        paused.invoke(Command(resume=True, goto="ask_and_process"), config(actor=RITA))


def test_an_agent_may_edit_a_thread_that_stands_at_no_hold_point(store):
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 5.0}, config(actor=AMY))

    graph.update_state(config(actor=AMY), {"refund_amount": 6.0})

    assert graph.get_state(config()).values["refund_amount"] == 6.0


def test_a_reviewer_does_not_feed_a_thread_that_stands_at_no_hold_point(store):
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 5.0}, config(actor=AMY))

    with pytest.raises(WrongRoleError, match="feeds thread 't1'"):
        graph.update_state(config(actor=RITA), {"refund_amount": 6.0})


def test_the_local_user_who_names_no_actor_holds_the_store(store, paused):
    # The rules bind named actors; a Python caller without one is the store's owner
    paused.update_state(config(), {"refund_amount": 300.0})

    result = paused.invoke(Command(resume=True), config())

    assert result["__interrupt__"][0].value == {"question": "Approve a $300.0 refund?"}


# -- forks: ids and the first checkpoint ------------------------------------


@pytest.mark.parametrize("fork_id", ["evil/../x?#%", 42, "", " padded"])
def test_a_fork_id_follows_the_thread_id_rule(store, paused, fork_id):
    first = next(iter(paused.get_state_history(config()))).config["configurable"]["checkpoint_id"]
    older = list(paused.get_state_history(config()))[-1].config["configurable"]["checkpoint_id"]
    assert first != older

    with pytest.raises(InvalidThreadIdError, match="Invalid fork_thread_id"):
        paused.invoke(None, config(actor=AMY, checkpoint_id=older, fork_thread_id=fork_id))


def test_a_run_from_the_first_checkpoint_replays_the_input(store):
    # Given a finished thread
    graph = threshold_graph(store)
    graph.invoke({"refund_amount": 5.0}, config(actor=AMY))
    [*_, first] = graph.get_state_history(config())
    assert first.next == ("__start__",)

    # When it is run again from its input checkpoint
    result = graph.invoke(None, {"configurable": {**first.config["configurable"], "actor": AMY}})

    # Then it runs from the start on a fork, as LangGraph replays it
    assert result == {"refund_amount": 5.0, "outcome": "Refund of $5.0 processed."}
    assert event_names(store, "t1~2")[:2] == ["ThreadForked", "NodeCompleted"]


# -- an answer carried into a fork ------------------------------------------


@pytest.fixture
def answered_checkpoint(store: Workflows, paused: CompiledStateGraph) -> str:
    """The checkpoint of t1 where rita's approval waits for its node: a resume sent with an
    update records the answer, then the edit (a checkpoint), then the node runs."""
    command = Command(resume=True, update={"outcome": "pending"})
    paused.invoke(command, config(actor=RITA, decision="approve"))
    [edited] = [h for h in paused.get_state_history(config()) if h.metadata["source"] == "update"]
    return str(edited.config["configurable"]["checkpoint_id"])


def test_an_answer_carried_into_a_fork_applies_to_the_same_question(
    store, paused, answered_checkpoint
):
    # When a reviewer runs on from there, on a fork
    result = paused.invoke(None, config(actor=ROB, checkpoint_id=answered_checkpoint))

    # Then the node gets the answer: it asks what was answered
    assert result["outcome"] == "Refund of $250.0 processed."


def test_an_answer_carried_into_a_fork_does_not_apply_to_another_question(
    store, paused, answered_checkpoint
):
    # Given rob forks there (as the forker he may not edit it: separation of duties)
    with pytest.raises(SeparationOfDutiesError, match="'rob' forked thread"):
        paused.update_state(
            config(actor=ROB, checkpoint_id=answered_checkpoint), {"refund_amount": 999.0}
        )
    version = next(
        v.version for v in versions(store, "t1") if v.checkpoint_id == answered_checkpoint
    )
    fork_at_version(store, "t1", version, ROB, new_thread_id="t1-b")

    # When an admin changes the amount on the fork, and the fork runs on
    paused.update_state(config("t1-b", actor=ADA), {"refund_amount": 999.0})
    result = paused.invoke(None, config("t1-b", actor=AMY))

    # Then the node asks anew about what it now pays
    assert result["outcome"] == "pending"
    assert result["__interrupt__"][0].value == {"question": "Approve a $999.0 refund?"}


# -- a run's goto may not skip the nodes on the way ---------------------------


def test_an_agent_may_not_goto_past_the_approval_node(store):
    # Given a new refund_approval thread, its values edited by the agent (it stands at no
    # hold point, so the agent may)
    graph = created(store, AMY)
    graph.update_state(config(actor=AMY), {"refund_amount": 250000.0, "approved": True})
    before = event_names(store)

    # When the agent routes it straight to the payment
    with pytest.raises(HoldPointBypassError, match="skips the nodes on the way"):
        graph.invoke(Command(goto="process_refund"), config(actor=AMY))

    # Then nothing ran, and the refusal is on record
    assert event_names(store) == before
    assert refusals(store) == [("amy", "hold_point")]


def test_even_an_admin_decides_the_flow_by_an_edit_as_node_not_by_goto(store):
    graph = created(store, AMY)

    with pytest.raises(HoldPointBypassError, match="edits the state as_node, with a reason"):
        graph.invoke(Command(goto="process_refund"), config(actor=ADA))


def test_a_goto_where_the_graph_starts_the_thread_is_input_like_any_other(store):
    # Given
    graph = created(store, AMY)

    # When
    result = graph.invoke(
        Command(update={"refund_amount": 250.0}, goto="request_approval"), config(actor=AMY)
    )

    # Then the node asks
    assert result["__interrupt__"][0].value == QUESTION
