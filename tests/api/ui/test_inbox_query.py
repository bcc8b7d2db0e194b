"""The inbox's reading of its query string, and how it sums up an interrupt."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from api.ui.inbox_query import (
    Inbox,
    InboxFilters,
    InboxItem,
    is_overdue,
    summary,
    title_of,
)
from api.ui.pages import ENVIRONMENT
from projections.pending_approvals import PendingApproval


def test_a_declared_title_comes_first():
    approval = PendingApproval(
        interrupt_id="i1",
        thread_id="t1",
        graph_id="content_review",
        node="review",
        payload={"content": "Draft: spring sale"},
        raised_at="2026-03-01T10:00:00.000000Z",
        age_seconds=1.0,
        required_role=None,
        due_by=None,
        assigned_to=None,
        title="Publish? Draft: spring sale",
    )

    assert title_of(approval) == "Publish? Draft: spring sale"
    assert title_of(replace(approval, title=None)) == "content: Draft: spring sale"


def test_search_and_assigned_to_me_are_kept_in_the_links():
    filters = InboxFilters.from_query({"q": "  acme order ", "mine": "1"})

    assert filters.query() == {"q": "acme order", "mine": "1", "sort": "oldest"}
    assert filters.narrowed


def test_unknown_choices_fall_back_to_the_defaults():
    filters = InboxFilters.from_query({"sort": "evil", "age": "1y", "page": "-3", "overdue": "x"})

    assert filters == InboxFilters()


def test_the_filters_make_the_links_query_string():
    filters = InboxFilters.from_query({"graph_id": "refund", "overdue": "1", "sort": "newest"})

    assert filters.query(page=2) == {
        "graph_id": "refund",
        "overdue": "1",
        "sort": "newest",
        "page": "2",
    }


def test_an_interrupt_is_summed_up_by_its_question_else_its_fields_never_json():
    assert summary({"question": "Approve a $300 refund?", "amount": 300}) == (
        "Approve a $300 refund?"
    )
    assert summary({"amount": 300, "ok": True}) == "amount: 300 · ok: true"
    assert summary({"content": "Draft:\n hi", "tags": ["a", "b"], "to": {"name": "Ann"}}) == (
        "content: Draft: hi · tags: (a, b) · to: (name: Ann)"
    )
    assert summary("x" * 500).endswith("…")
    assert len(summary("x" * 500)) == 160


def test_a_review_of_an_agents_tool_calls_is_summed_up_by_the_calls():
    # HumanInTheLoopMiddleware's batched request, and Agent Inbox's HumanInterrupt list
    batched = {
        "action_requests": [
            {"name": "issue_refund", "args": {"customer": "acme", "amount": 500}},
            {"name": "send_email", "args": {}},
        ],
        "review_configs": [],
    }
    inbox = [
        {
            "action_request": {"action": "send", "args": {"to": "ann"}},
            "config": {"allow_accept": True},
            "description": "Send it?",
        }
    ]

    assert summary(batched) == (
        "Review tool calls: issue_refund (customer: acme, amount: 500) · send_email ()"
    )
    assert summary(inbox) == "Review tool call: send (to: ann)"


def test_an_interrupt_is_overdue_once_its_deadline_has_passed():
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)

    assert is_overdue("2026-03-01T11:59:59.000000Z", now)
    assert not is_overdue("2026-03-01T12:00:01.000000Z", now)
    assert not is_overdue(None, now)


def test_an_overdue_item_stands_out_in_words_not_only_colour():
    # Given an inbox with one overdue interrupt and one on time
    def item(interrupt_id, overdue):
        approval = PendingApproval(
            interrupt_id=interrupt_id,
            thread_id=f"thread-{interrupt_id}",
            graph_id="refund",
            node="check_and_process",
            payload={"question": "Approve?"},
            raised_at="2026-03-01T10:00:00.000000Z",
            age_seconds=7200.0,
            required_role=None,
            due_by="2026-03-01T11:00:00.000000Z",
            assigned_to=None,
        )
        return InboxItem(approval, overdue, "Approve?")

    inbox = Inbox([item("late", True), item("fine", False)], 2, 1, 1, False, "sig")

    # When the queue is rendered
    html = ENVIRONMENT.get_template("_queue.html").render(filters=InboxFilters(), inbox=inbox)

    # Then the overdue one carries the class and a badge that says so; the other neither
    late = html[html.index('data-interrupt="late"') - 40 : html.index('data-interrupt="fine"')]
    fine = html[html.index('data-interrupt="fine"') - 40 :]
    assert 'class="item overdue"' in late
    assert "Overdue</span>" in late
    assert "overdue" not in fine.split("</li>")[0].lower()
    assert "<strong>1</strong> overdue" in html
