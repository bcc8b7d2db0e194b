"""`api.ui.decision_offer`: the decisions the page offers for an open interrupt, and why
it leaves the others out."""

from __future__ import annotations

from api.ui.access import Viewer
from api.ui.decidable import Refusal
from api.ui.decision_offer import decision_kinds, offer, who_may_decide
from domain.access.identity import Principal
from domain.access.roles import BUILT_IN
from service.sessions import Session
from tests.api.ui.story import MIDDLEWARE_REVIEW


def viewer(role: str) -> Viewer:
    principal = Principal(f"{role}-1", role, f"k-{role}")
    return Viewer(
        principal, Session("s", principal.key_id, 0.0, 0.0, 0.0), BUILT_IN.permissions(role)
    )


def test_a_plain_question_takes_every_kind():
    kinds, absent = decision_kinds({"value": {"question": "Refund?"}})

    assert kinds == ("approve", "reject", "edit", "respond", "escalate")
    assert absent == ()


def test_several_approvals_take_approve_and_reject_only_and_say_why():
    found = offer({"value": {"q": 1}, "approvals": 2}, viewer("reviewer"), None)

    assert found.kinds == ("approve", "reject")
    assert found.absent_by_reason() == [
        (
            "this interrupt needs 2 approvals by different principals: each of them approves "
            "or rejects",
            ["Approve with edits", "Respond", "Escalate"],
        )
    ]


def test_a_review_offers_what_its_actions_allow_and_one_button_only_what_all_allow():
    found = offer({"value": MIDDLEWARE_REVIEW}, viewer("reviewer"), None)

    assert found.kinds == ("approve", "reject", "edit")
    assert found.quick == ("approve", "reject")
    assert [why for why, _ in found.absent_by_reason()] == [
        "no action of this review allows it",
        "a review of tool calls is answered action by action, as the agent's middleware takes",
    ]


def test_a_refused_viewer_is_offered_no_decision_but_may_still_cancel():
    refused = Refusal("separation_of_duties", "you started it")

    found = offer({"value": {"q": 1}}, viewer("reviewer"), refused)

    assert (found.kinds, found.refusal, found.may_cancel) == ((), refused, True)
    assert offer({"value": {"q": 1}}, viewer("auditor"), refused).may_cancel is False


def test_who_may_decide_names_admin_once():
    assert who_may_decide({"required_role": "admin"}) == "admin"
    assert who_may_decide({"required_role": None}) == "reviewer or admin"
    assert who_may_decide({"required_role": "manager"}) == "manager or admin"
