"""Reviews of an agent's tool calls (domain/oversight/reviews.py): given an interrupt's
payload in each shape LangChain's agents raise, when a reviewer decides, then the answer
the graph resumes with, and the decisions each action allows."""

from __future__ import annotations

import pytest

from domain.oversight.reviews import (
    ReviewDecisionError,
    check_review_answer,
    review_answer,
    review_of,
    review_outcome,
)

BATCHED = {
    "action_requests": [
        {"name": "issue_refund", "args": {"amount": 500}, "description": "Refund?"},
        {"name": "send_email", "args": {"to": "a@b"}, "description": "Email?"},
    ],
    "review_configs": [
        {"action_name": "issue_refund", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]},
    ],
}
PER_CALL = {
    "type": "tool_approval",
    "tool_call_id": "c-1",
    "name": "issue_refund",
    "args": {"amount": 500},
    "description": "Refund?",
}
PER_CALL_SCHEMA = {
    "$type": "schema",
    "json_schema": {
        "oneOf": [
            {"properties": {"type": {"const": "approve"}}},
            {"properties": {"type": {"const": "reject"}, "message": {"type": "string"}}},
        ]
    },
}
INBOX = [
    {
        "action_request": {"action": "issue_refund", "args": {"amount": 500}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": False,
                   "allow_ignore": True},
        "description": "Refund?",
    }
]  # fmt: skip


def test_each_shape_is_read_as_its_actions_and_what_they_allow():
    assert [(a["name"], a["allowed"]) for a in review_of(BATCHED)["actions"]] == [
        ("issue_refund", ["approve", "edit", "reject"]),
        ("send_email", ["approve", "reject"]),
    ]
    assert review_of(PER_CALL, PER_CALL_SCHEMA)["actions"][0]["allowed"] == ["approve", "reject"]
    assert review_of(INBOX)["actions"][0]["allowed"] == ["approve", "edit", "reject"]
    assert review_of({"question": "Approve?"}) is None


def test_a_decision_is_made_the_middlewares_own_answer():
    batched = review_of(BATCHED)
    assert review_answer(batched, "approve", None, None) == {
        "decisions": [{"type": "approve"}, {"type": "approve"}]
    }
    assert review_answer(batched, "reject", None, "no") == {
        "decisions": [{"type": "reject", "message": "no"}, {"type": "reject", "message": "no"}]
    }
    per_call = review_of(PER_CALL, PER_CALL_SCHEMA)
    assert review_answer(per_call, "approve", None, None) == {"type": "approve"}
    inbox = review_of(INBOX)
    assert review_answer(inbox, "edit", {"amount": 50}, None) == [
        {"type": "edit", "args": {"action": "issue_refund", "args": {"amount": 50}}}
    ]
    assert review_answer(inbox, "reject", None, None) == [{"type": "ignore", "args": None}]


def test_a_decision_an_action_does_not_allow_is_refused():
    with pytest.raises(ReviewDecisionError, match="not allowed for action 'send_email'"):
        review_answer(review_of(BATCHED), "edit", [{"amount": 1}, {"to": "x"}], None)
    with pytest.raises(ReviewDecisionError, match="not allowed for action 'issue_refund'"):
        review_answer(review_of(PER_CALL, PER_CALL_SCHEMA), "edit", {"amount": 1}, None)
    with pytest.raises(ReviewDecisionError, match="not allowed"):
        review_answer(review_of(INBOX), "respond", "done", None)


def test_an_approve_must_approve_every_action():
    mixed = {"decisions": [{"type": "approve"}, {"type": "reject"}]}

    with pytest.raises(ReviewDecisionError, match="approve decides every action"):
        check_review_answer(review_of(BATCHED), "approve", mixed)
    check_review_answer(review_of(BATCHED), "edit", mixed)  # a mixed answer is no approve


def test_the_outcome_says_what_became_of_each_action():
    answer = {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "issue_refund", "args": {"amount": 50}}},
            {"type": "reject", "message": "not now"},
        ]
    }

    assert review_outcome(review_of(BATCHED), answer) == [
        {
            "name": "issue_refund",
            "args": {"amount": 500},
            "decision": "edit",
            "edited_args": {"amount": 50},
            "message": None,
        },
        {
            "name": "send_email",
            "args": {"to": "a@b"},
            "decision": "reject",
            "edited_args": None,
            "message": "not now",
        },
    ]
