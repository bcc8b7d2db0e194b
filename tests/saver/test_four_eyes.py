"""Four eyes from Python: given a thread on HoldpointSaver paused at an interrupt that
needs two approvals, when reviewers approve with `HoldpointSaver.approve` and resume with
`Command(resume=...)`, then the graph goes on only after the second; a resume short of
the approvals is refused, on record, with the reason (LangGraph ran the node on it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.types import Command

from domain.errors import (
    ApprovalsOutstandingError,
    InvalidUpdateError,
    RepeatedApprovalError,
    ThreadNotFoundError,
    WrongRoleError,
)
from domain.oversight.hold_points import Oversight
from langgraph.checkpoint.holdpoint import HoldpointSaver
from tests.saver.langgraph_graphs import refund_builder, thread
from tests.saver.test_strict import kinds, refusals

AMY = {"id": "amy", "role": "agent"}
RITA = {"id": "rita", "role": "reviewer"}
RAJ = {"id": "raj", "role": "reviewer"}


def four_eyes(store: Any) -> tuple[HoldpointSaver, Any]:
    saver = HoldpointSaver(store, oversight=Oversight(approvals=2))
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 150}, thread("t", actor=AMY))
    return saver, graph


def test_an_approval_records_one_of_two_and_the_second_reviewers_resume_goes_on(store):
    saver, graph = four_eyes(store)

    saver.approve(thread("t", actor=RITA, reason="checked the invoice"))

    assert graph.get_state(thread("t")).next == ("review",)
    [approved] = kinds(store, "t", "InterruptApproved")
    assert (approved.actor["id"], approved.approvals, approved.needed) == ("rita", 1, 2)
    assert approved.reason == "checked the invoice"

    result = graph.invoke(Command(resume=True), thread("t", actor=RAJ, decision="approve"))

    assert result["log"] == ["reviewed: True", "paid 150"]
    [resumed] = kinds(store, "t", "InterruptResumed")
    assert (resumed.actor["id"], resumed.decision) == ("raj", "approve")


def test_a_resume_short_of_the_approvals_is_refused_and_says_the_node_ran(store):
    saver, graph = four_eyes(store)

    with pytest.raises(ApprovalsOutstandingError, match=r"needs 2 approvals .* has 1") as error:
        graph.invoke(Command(resume=True), thread("t", actor=RITA, decision="approve"))

    # LangGraph ran the node on the resume before the saver could hold it; the error and
    # the record say so, and name the way that holds: HoldpointSaver.approve first.
    assert "LangGraph ran node 'review'" in str(error.value)
    assert "HoldpointSaver.approve" in str(error.value)
    assert refusals(saver)[-1] == ("rita", "four_eyes")
    assert [e.actor["id"] for e in kinds(store, "t", "InterruptApproved")] == ["rita"]
    assert kinds(store, "t", "InterruptResumed") == []
    assert store.thread("t").status == "interrupted"  # the run went no further on record


def test_after_a_resume_short_of_the_approvals_the_node_runs_on_the_answer_then_given(store):
    # Given a resume short of the approvals, refused after LangGraph ran the node on it
    _, graph = four_eyes(store)
    with pytest.raises(ApprovalsOutstandingError):
        graph.invoke(Command(resume=True), thread("t", actor=RITA, decision="approve"))

    # Then the node waits to run again, and runs on the next reviewer's answer, not on
    # the refused one it ran with
    assert graph.get_state(thread("t")).next == ("review",)
    result = graph.invoke(Command(resume=False), thread("t", actor=RAJ, decision="reject"))
    assert result["log"] == ["reviewed: False", "paid 150"]
    [resumed] = kinds(store, "t", "InterruptResumed")
    assert (resumed.actor["id"], resumed.resume) == ("raj", False)


def test_the_last_approval_is_a_resume_and_is_refused_as_an_approval(store):
    saver, _ = four_eyes(store)
    saver.approve(thread("t", actor=RITA))
    before = len(store.thread_events("t"))

    with pytest.raises(InvalidUpdateError, match=r"approval 2, the last: .*Command\(resume"):
        saver.approve(thread("t", actor=RAJ))

    assert len(store.thread_events("t")) == before


def test_the_same_reviewer_may_not_approve_twice(store):
    saver, _ = four_eyes(store)
    saver.approve(thread("t", actor=RITA))

    with pytest.raises(RepeatedApprovalError, match="another must concur"):
        saver.approve(thread("t", actor=RITA))

    assert refusals(saver)[-1] == ("rita", "four_eyes")
    assert len(kinds(store, "t", "InterruptApproved")) == 1


def test_an_approval_is_held_to_the_hold_points_rules_and_refused_on_record(store):
    saver, _ = four_eyes(store)

    with pytest.raises(WrongRoleError):
        saver.approve(thread("t", actor={"id": "zed", "role": "agent"}))

    assert refusals(saver)[-1] == ("zed", "wrong_role")
    assert kinds(store, "t", "InterruptApproved") == []


def test_an_approval_of_a_thread_never_begun_is_refused(store):
    saver = HoldpointSaver(store, oversight=Oversight(approvals=2))

    with pytest.raises(ThreadNotFoundError):
        saver.approve(thread("nowhere", actor=RITA))

    assert store.thread_events("nowhere") == []


def test_the_async_approval_records_the_same(store):
    saver, _ = four_eyes(store)

    asyncio.run(saver.aapprove(thread("t", actor=RITA)))

    assert [e.actor["id"] for e in kinds(store, "t", "InterruptApproved")] == ["rita"]


def test_an_approval_that_loses_a_race_to_the_same_reviewer_is_refused_on_record(store):
    """Two processes, each with its saver: the second still has the thread as it was
    before the first recorded Rita's approval, so its approval is applied, then refused
    at the commit, when it meets the first's on the thread read again."""
    first, _ = four_eyes(store)
    second = HoldpointSaver(store, oversight=Oversight(approvals=2))
    second.get_tuple(thread("t"))  # the thread at hand, before the first's approval
    first.approve(thread("t", actor=RITA))

    with pytest.raises(RepeatedApprovalError, match="another must concur"):
        second.approve(thread("t", actor=RITA))

    assert refusals(second)[-1] == ("rita", "four_eyes")
    assert len(kinds(store, "t", "InterruptApproved")) == 1
