"""The decision page in Chromium: only the decisions the viewer may make, what a decision
recorded (post-redirect-get), respond, cancel, the deadline and four eyes.

A real server (SQLite store) with the test graphs and one whose interrupt has a
deadline; waits are on the page's DOM (Playwright's `expect`), never on time.
"""

from __future__ import annotations

import os
import re
from typing import Any, TypedDict

import pytest

from domain.record.thread import WorkflowThread
from domain.types import interrupt
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import horizontal_overflow, sign_in
from tests.api.ui.story import MIDDLEWARE_REVIEW, paused
from tests.api.ui.ui_client import UiClient, csrf_of, idempotency_key_of
from tests.graphs import linear_graph
from tests.saver.langgraph_graphs import REFUNDS, refund_agent

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect


class Timed(TypedDict):
    question: str
    answer: Any


def timed_review(state: Timed) -> dict[str, Any]:
    """A question that must be answered within an hour."""
    return {"answer": interrupt({"question": state["question"]}, deadline=3600)}


class RefundTerms(TypedDict):
    proposal: dict[str, Any]
    answer: Any


# The answer a LangGraph node declares it takes (`interrupt(..., response_schema=...)`)
REFUND_TERMS = {
    "title": "Refund terms",
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "title": "Amount", "minimum": 0, "maximum": 1000},
        "currency": {"title": "Currency", "enum": ["EUR", "USD"]},
        "note": {"type": "string", "title": "Note to the customer", "maxLength": 200},
        "notify": {"type": "boolean", "title": "Notify the customer"},
        "account": {
            "type": "object",
            "title": "Refund to",
            "properties": {
                "iban": {"type": "string", "title": "IBAN", "pattern": "^[A-Z]{2}[0-9]{2}"}
            },
            "required": ["iban"],
        },
    },
    "required": ["amount", "currency", "account"],
}


def agree_terms(state: RefundTerms) -> dict[str, Any]:
    from langgraph.types import interrupt as ask  # noqa: PLC0415 - LangGraph's own

    question = {"question": "Agree the refund terms?", "proposal": state["proposal"]}
    return {"answer": ask(question, response_schema=REFUND_TERMS)}


def terms_graph() -> Any:
    from langgraph.graph import END, START, StateGraph  # noqa: PLC0415 - LangGraph's own

    builder = StateGraph(RefundTerms)
    builder.add_node("agree_terms", agree_terms)
    builder.add_edge(START, "agree_terms")
    builder.add_edge("agree_terms", END)
    return builder.compile()


def extra_graphs(store: Any) -> dict[str, Any]:
    return {
        "timed": linear_graph(store, Timed, timed_review, name="timed"),
        "terms": LangGraphApp(terms_graph(), "terms", store),
        # LangChain's create_agent, its refund reviewed by HumanInTheLoopMiddleware per call
        "refund-agent": LangGraphApp(refund_agent("per_call"), "refund-agent", store),
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui-decision-store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}", extra=extra_graphs) as running:
        yield running


def events_of(server, thread_id, kind):
    return [e for e in server.store.thread_events(thread_id) if isinstance(e, kind)]


def api_refusal(server, who, interrupt_id):
    """The reason the API gives for refusing `who`'s approval (None if it is accepted)."""
    with server.http(who) as client:
        answer = client.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    return answer.json().get("reason") if answer.status_code == 403 else answer.status_code


# -- who may decide ---------------------------------------------------------------------


def admin_only(server):
    """An interrupt only an admin may decide, opened by a reviewer."""
    return "reviewer", paused(server, graph="guarded", values={"amount": 10.0})[1]


def no_decide_permission(server):
    return "auditor", paused(server)[1]


def own_thread(server):
    """The admin started the thread: separation of duties."""
    return "admin", paused(server, who="admin")[1]


def approved_once(server):
    """Four eyes: the reviewer already gave one of the two approvals."""
    _, interrupt_id = paused(server, graph="four_eyes", values={"amount": 900.0})
    with server.http("reviewer") as reviewer:
        given = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})
    assert given.status_code == 200, given.text
    return "reviewer", interrupt_id


def suspended_graph(server):
    _, interrupt_id = paused(server, graph="explained", values={"draft": "Q3"})
    with server.http("admin") as admin:
        admin.post("/graphs/explained/suspend", json={"reason": "incident 7"}).raise_for_status()
    return "reviewer", interrupt_id


def out_of_scope(server):
    """A reviewer whose key decides the echo graph only, opening a refund."""
    if "scoped" not in server.keys:
        info = server.services.keyring.create("scoped", "reviewer", graphs=["echo"])
        server.keys["scoped"] = info[1]
    return "scoped", paused(server)[1]


# Each reason: the interrupt and who opens it, the refusal's code and words on the page,
# and what the API answers that viewer's approval (the reason of its 403, or its status)
REASONS = {
    "role": (admin_only, "wrong_role", "may be answered by role 'admin'", "wrong_role"),
    "no-decide-permission": (
        no_decide_permission,
        "wrong_role",
        "may not decide interrupts",
        "wrong_role",
    ),
    "separation-of-duties": (
        own_thread,
        "separation_of_duties",
        "separation of duties",
        "separation_of_duties",
    ),
    "four-eyes-already-given": (approved_once, "four_eyes", "has already approved", "four_eyes"),
    "suspended-graph": (suspended_graph, "suspended", "incident 7", 409),
    "out-of-key-scope": (out_of_scope, "out_of_scope", "echo", "out_of_scope"),
}


@pytest.mark.parametrize("why", list(REASONS))
def test_a_reviewer_never_sees_a_form_they_cannot_use(server, page, why):
    # Given an open interrupt the viewer may not decide, for this reason
    given, code, sentence, by_api = REASONS[why]
    who, interrupt_id = given(server)
    try:
        # When they open it
        sign_in(page, server.url, server.keys[who], f"/ui/approvals/{interrupt_id}")

        # Then no decision form nor button is there, and the page says why
        expect(page.locator("#refusal")).to_contain_text(sentence)
        expect(page.locator("#refusal")).to_have_attribute("data-reason", code)
        expect(page.locator('form[action$="/decision"]')).to_have_count(0)
        for label in ("Approve", "Reject", "Approve with edits", "Respond", "Escalate"):
            expect(page.get_by_role("button", name=label, exact=True)).to_have_count(0)
        # And the API, asked for that decision, refuses it for the same reason
        assert api_refusal(server, who, interrupt_id) == by_api
    finally:
        if why == "suspended-graph":
            with server.http("admin") as admin:
                admin.post("/graphs/explained/lift", json={"reason": "over"}).raise_for_status()


def test_who_may_decide_an_admin_only_interrupt_says_admin_once(server, page):
    # Given an interrupt only an admin may decide
    _, interrupt_id = paused(server, graph="guarded", values={"amount": 10.0})

    # When an admin opens it
    sign_in(page, server.url, server.keys["admin"], f"/ui/approvals/{interrupt_id}")

    # Then it names the role once, and the admin may decide
    expect(page.locator("#who-may-decide")).to_have_text("admin")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()


def test_four_eyes_offers_approve_and_reject_only_and_shows_progress(server, page):
    # Given a four-eyes interrupt approved once, by reviewer
    _, interrupt_id = approved_once(server)

    # When reviewer2 opens it
    sign_in(page, server.url, server.keys["reviewer2"], f"/ui/approvals/{interrupt_id}")

    # Then it shows the progress, offers approve and reject, and says why not the others
    expect(page.locator("#approvals")).to_contain_text("1 of 2 approvals: reviewer")
    buttons = page.locator("#decide button")
    expect(buttons).to_have_text(["Approve", "Reject"])
    expect(page.locator("#absent")).to_contain_text(
        "Not offered: Approve with edits, Respond, Escalate: this interrupt needs 2 approvals"
    )


# -- after a decision -------------------------------------------------------------------


def test_a_decision_leads_to_what_was_recorded_and_a_reload_sends_nothing(server, page):
    # Given two open refunds, the reviewer on the first one
    thread_id, interrupt_id = paused(server, values={"refund_amount": 410.0})
    paused(server, values={"refund_amount": 420.0})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    expect(page.locator("h1")).to_have_text("Decision: check_and_process")

    # When they approve it with a reason
    page.get_by_label("Reason (optional)").fill("Receipt checked")
    page.get_by_role("button", name="Approve", exact=True).click()

    # Then they land on a page (a GET) that says what was recorded, the node still named
    expect(page).to_have_url(re.compile(rf"/ui/approvals/{interrupt_id}/recorded\?version=\d+$"))
    (event,) = events_of(server, thread_id, WorkflowThread.InterruptResumed)
    expect(page.locator("h1")).to_have_text("Decision: check_and_process")
    expect(page.locator("#recorded-kind")).to_have_text("approve")
    expect(page.locator("#recorded-reason")).to_have_text("Receipt checked")
    expect(page.locator("#recorded-hash")).to_have_text(event.event_hash)
    expect(page.locator("#recorded-at")).to_contain_text(event.timestamp.strftime("%Y-%m-%d %H:%M"))
    expect(page.locator("#thread-status")).to_have_text("completed")
    # And a link to the next one in the queue
    next_link = page.locator("#next-in-queue")
    expect(next_link).to_have_attribute("href", re.compile(r"/ui/approvals/\w+$"))
    # And reloading it records nothing more
    count = server.event_count(thread_id)
    page.reload()
    expect(page.locator("#recorded-kind")).to_have_text("approve")
    assert server.event_count(thread_id) == count
    # And the next link opens an open interrupt the reviewer may decide
    next_link.click()
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()


def test_a_first_of_two_approvals_says_how_many_are_given(server, page):
    # Given a four-eyes interrupt
    _, interrupt_id = paused(server, graph="four_eyes", values={"amount": 901.0})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # When the first reviewer approves
    page.get_by_role("button", name="Approve", exact=True).click()

    # Then the page says one of two approvals is recorded, and the interrupt stays open
    expect(page.locator("#approvals")).to_contain_text("1 of 2 approvals")
    expect(page.locator("#approvals")).to_contain_text("stays open")
    expect(page.locator("#recorded-kind")).to_have_text("approve")


# -- respond and cancel -----------------------------------------------------------------


def test_respond_resumes_the_node_with_the_reviewers_own_answer(server, page):
    # Given an open question
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": "Which colour?"})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # When the reviewer responds with an answer of their own
    page.get_by_text("Respond with an answer of your own").click()
    page.get_by_label("Your response (the node gets this text)").fill("The blue one")
    page.get_by_role("button", name="Respond", exact=True).click()

    # Then the respond is recorded, and the node resumed with that text
    expect(page.locator("#recorded-kind")).to_have_text("respond")
    (event,) = events_of(server, thread_id, WorkflowThread.InterruptResumed)
    assert (event.decision, event.resume) == ("respond", "The blue one")


def test_cancel_needs_a_reason_and_stops_the_thread(server, page):
    # Given an open interrupt, the reviewer on its page
    thread_id, interrupt_id = paused(server, values={"refund_amount": 430.0})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)

    # When they ask to cancel without a reason
    page.get_by_text("Stop this thread for good").click()
    page.get_by_role("button", name="Cancel the thread").click()

    # Then the browser asks for one first, and nothing is sent
    expect(page.locator("#cancel-reason:invalid")).to_have_count(1)
    assert sent == []

    # When they give one
    page.get_by_label("Why it is stopped (required)").fill("Customer withdrew the claim")
    page.get_by_role("button", name="Cancel the thread").click()

    # Then the thread is cancelled, and the page says so with the event's hash
    expect(page.locator("#recorded-kind")).to_have_text("cancel")
    expect(page.locator("#recorded-reason")).to_have_text("Customer withdrew the claim")
    (event,) = events_of(server, thread_id, WorkflowThread.ThreadCancelled)
    expect(page.locator("#recorded-hash")).to_have_text(event.event_hash)
    assert server.store.thread(thread_id).status == "cancelled"


def test_an_auditor_is_offered_no_cancel(server, page):
    _, interrupt_id = paused(server)

    sign_in(page, server.url, server.keys["auditor"], f"/ui/approvals/{interrupt_id}")

    expect(page.locator("#refusal")).to_be_visible()
    expect(page.locator("#cancel-form")).to_have_count(0)


# -- the deadline -----------------------------------------------------------------------


def test_the_deadline_counts_down_from_the_time_the_server_rendered(server, page, context):
    # Given an interrupt due in an hour
    _, interrupt_id = paused(server, graph="timed", values={"question": "Ship it?"})

    # When the reviewer opens it without JavaScript, then with it
    quiet = context.browser.new_context(java_script_enabled=False).new_page()
    sign_in(quiet, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # Then the server's rendering says when and how long is left
    expect(quiet.locator("#deadline time")).to_contain_text("UTC")
    expect(quiet.locator("#countdown")).to_have_text(re.compile(r"^\(in (59 min|1 h)"))
    # And the script keeps counting the seconds down
    first = page.locator("#countdown").inner_text()
    expect(page.locator("#countdown")).not_to_have_text(first)
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^\(in 59 min \d+ s\)$"))
    quiet.context.close()


# -- edit with a schema form ------------------------------------------------------------

PROPOSAL = {"amount": 500, "currency": "EUR", "notify": True, "account": {"iban": "DE89 3704"}}


def test_edit_with_a_schema_form_resumes_with_the_edited_value_and_bad_input_is_caught(
    server, page
):
    # Given a LangGraph node that declares the answer it takes, and proposes one
    thread_id, interrupt_id = paused(server, graph="terms", values={"proposal": PROPOSAL})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)

    # When the reviewer opens the edit: its fields, filled with the proposal
    page.get_by_text("Approve with edits: the answer the graph asks for").click()
    amount = page.get_by_label("Amount (required)")
    expect(amount).to_have_value("500")
    expect(page.get_by_label("Currency (required)")).to_have_value("0")  # EUR, the first
    expect(page.get_by_label("Notify the customer")).to_be_checked()
    expect(page.get_by_role("group", name="Refund to").get_by_label("IBAN")).to_have_value(
        "DE89 3704"
    )

    # When they send an amount above the schema's maximum
    amount.fill("5000")
    page.get_by_role("button", name="Approve with edits").click()

    # Then it is caught before it is sent, next to the field
    expect(page.locator("#f-value_amount-error")).to_be_visible()
    expect(page.locator("#f-value_amount")).to_have_attribute("aria-invalid", "true")
    # And so is an IBAN that does not match the schema's pattern
    amount.fill("450")
    page.get_by_label("IBAN").fill("nope")
    page.get_by_role("button", name="Approve with edits").click()
    expect(page.locator("#f-value_account_iban-error")).to_contain_text("pattern")
    assert sent == []
    assert server.store.thread(thread_id).interrupts.get(interrupt_id) is not None

    # When they correct it, pick another currency, and send
    page.get_by_label("IBAN").fill("NL91 ABNA")
    page.get_by_label("Currency (required)").select_option("USD")
    page.get_by_label("Notify the customer").uncheck()
    page.get_by_label("Note to the customer").fill("Partial refund")
    page.get_by_label("Reason for the edit (optional)").fill("Half was used")
    page.get_by_role("button", name="Approve with edits").click()

    # Then the edit is recorded, and the node resumed with exactly the edited value
    expect(page.locator("#recorded-kind")).to_have_text("edit")
    edited = {
        "amount": 450,
        "currency": "USD",
        "note": "Partial refund",
        "notify": False,
        "account": {"iban": "NL91 ABNA"},
    }
    (event,) = events_of(server, thread_id, WorkflowThread.InterruptResumed)
    assert (event.decision, event.resume, event.reason) == ("edit", edited, "Half was used")
    server.sdk("agent").runs.join(thread_id, event.run_id)  # the node ran with it
    with server.http("reviewer") as reviewer:
        state = reviewer.get(f"/threads/{thread_id}/state").json()
    assert state["values"]["answer"] == edited


def test_the_server_checks_a_schema_form_again(server):
    # Given the edit form of an interrupt that declares its answer
    thread_id, interrupt_id = paused(server, graph="terms", values={"proposal": PROPOSAL})
    with UiClient(server.url) as ui:
        ui.sign_in(server.keys["reviewer"])
        page = ui.get(f"/ui/approvals/{interrupt_id}")
        form = {
            "csrf_token": csrf_of(page.text),
            "idempotency_key": idempotency_key_of(page.text),
            "decision": "edit",
            "edit_form": "fields",
            "value/amount": "5000",
            "value/currency": "7",
            "value/account/iban": "DE89",
        }

        # When the fields come back without the browser's checks
        answer = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    # Then each wrong field is named, what was typed is kept, and nothing is recorded
    assert answer.status_code == 422
    assert "Amount: must be at most 1000" in answer.text
    assert "Currency: choose one of the options" in answer.text
    assert 'name="value/amount" value="5000"' in answer.text
    assert events_of(server, thread_id, WorkflowThread.InterruptResumed) == []


# -- accessibility ----------------------------------------------------------------------


def refused_view(server):
    return "reviewer", admin_only(server)[1], None, None


def schema_form_view(server):
    _, interrupt_id = paused(server, graph="terms", values={"proposal": PROPOSAL})
    return (
        "reviewer",
        interrupt_id,
        "Approve with edits: the answer the graph asks for",
        ("#f-value_amount", "5000"),
    )


def every_section_open(server):
    _, interrupt_id = paused(server, graph="timed", values={"question": "Ship it?"})
    return "reviewer", interrupt_id, "Edit the value instead (JSON)", ("#resume", "{not json")


def review_cards_view(server):
    _, interrupt_id = paused(server, graph="echo", values={"payload": MIDDLEWARE_REVIEW})
    return "reviewer", interrupt_id, None, None


def inbox_card_view(server):
    _, interrupt_id = paused(server, graph="echo", values={"payload": INBOX_REVIEW})
    return "reviewer", interrupt_id, None, None


VIEWS = {
    "refused": refused_view,
    "schema-form": schema_form_view,
    "deadline": every_section_open,
    "middleware-cards": review_cards_view,
    "agent-inbox-card": inbox_card_view,
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_axe_core_finds_no_wcag_violation_on_the_decision_page_as_each_viewer_sees_it(
    server, browser, view
):
    # Given the decision page as this viewer sees it, its edit open if it has one
    who, interrupt_id, summary, bad = VIEWS[view](server)
    context = accessible_context(browser)
    page = context.new_page()
    sign_in(page, server.url, server.keys[who], f"/ui/approvals/{interrupt_id}")
    if summary is not None:  # its edit open, with a wrong value caught: its error shown
        page.get_by_text(summary).click()
        field, text = bad
        page.locator(field).fill(text)
        page.get_by_role("button", name="Approve with edits").click()
        expect(page.locator(f"{field}-error")).to_be_visible()

    # Then axe-core finds nothing against WCAG 2.0 and 2.1, A and AA
    assert axe_violations(page) == []
    context.close()


# -- a review of an agent's tool calls --------------------------------------------------

# What Agent Inbox's HumanInterrupt puts to a human: one call, that may not be edited
INBOX_REVIEW = [
    {
        "action_request": {"action": "close_ticket", "args": {"ticket": "T-7"}},
        "config": {
            "allow_accept": True,
            "allow_edit": False,
            "allow_respond": True,
            "allow_ignore": True,
        },
        "description": "Close the customer's ticket?",
    }
]


def choices(page, index):
    return page.locator(f"#action-{index} .choices label")


def test_a_middleware_review_shows_a_card_per_action_and_sends_its_decisions(server, page):
    # Given an agent's two proposed tool calls, put to a human by the middleware
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": MIDDLEWARE_REVIEW})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # Then each call is a card: its tool, its arguments, and the decisions it allows only
    refund, email = page.locator("#action-0"), page.locator("#action-1")
    expect(refund.locator("legend").first).to_have_text("Tool issue_refund")
    expect(choices(page, 0)).to_have_text(["Approve", "Edit the arguments", "Reject"])
    expect(choices(page, 1)).to_have_text(["Approve", "Reject"])
    expect(refund.get_by_label("amount")).to_have_value("500")
    # And the email's arguments are shown, not offered for editing
    expect(email.locator("pre")).to_contain_text('"to": "billing@acme.test"')
    expect(email.locator(".action-args")).to_have_count(0)
    # And only the buttons every action allows decide them all at once
    expect(page.get_by_role("button", name="Approve every action")).to_be_visible()
    expect(page.locator("#edit")).to_have_count(0)

    # When the reviewer edits the refund's amount and rejects the email with a message
    expect(refund.get_by_label("amount")).to_be_disabled()  # until Edit is chosen
    refund.get_by_label("Edit the arguments").check()
    refund.get_by_label("amount").fill("50")
    email.get_by_label("Reject").check()
    email.get_by_label("Message to the agent (optional)").fill("Not until it is paid")
    page.get_by_role("button", name="Send the decisions").click()

    # Then the middleware's own answer is recorded, and the graph resumed with it
    expect(page.locator("#recorded-kind")).to_have_text("edit")
    answer = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "issue_refund",
                    "args": {"customer": "acme", "amount": 50},
                },
            },
            {"type": "reject", "message": "Not until it is paid"},
        ]
    }
    (event,) = events_of(server, thread_id, WorkflowThread.InterruptResumed)
    assert event.resume == answer
    server.sdk("agent").runs.join(thread_id, event.run_id)  # the node ran with it
    with server.http("reviewer") as reviewer:
        state = reviewer.get(f"/threads/{thread_id}/state").json()
    assert state["values"]["answer"] == answer


def test_an_agent_inbox_interrupt_offers_its_allowed_responses_only(server, page):
    # Given an Agent Inbox interrupt that allows accept, ignore and respond, not edit
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": INBOX_REVIEW})
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    card = page.locator("#action-0")
    expect(choices(page, 0)).to_have_text(["Approve", "Reject", "Respond"])
    expect(page.locator("#absent")).to_contain_text("Approve with edits")

    # When the reviewer chooses to respond but writes nothing
    card.get_by_label("Respond").check()
    page.get_by_role("button", name="Send the decisions").click()

    # Then the browser asks for the message first
    expect(page.locator("#action-0-message-error")).to_be_visible()
    assert server.store.thread(thread_id).interrupts.get(interrupt_id) is not None

    # When they write it
    card.locator("#action-0-message").fill("Ask the customer first")
    page.get_by_role("button", name="Send the decisions").click()

    # Then Agent Inbox's own response shape is what the graph resumes with
    expect(page.locator("#recorded-kind")).to_have_text("respond")
    (event,) = events_of(server, thread_id, WorkflowThread.InterruptResumed)
    assert event.resume == [{"type": "response", "args": "Ask the customer first"}]


def test_a_card_decision_the_action_does_not_allow_is_refused_by_the_server(server):
    # Given the cards of a middleware review
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": MIDDLEWARE_REVIEW})
    with UiClient(server.url) as ui:
        ui.sign_in(server.keys["reviewer"])
        page = ui.get(f"/ui/approvals/{interrupt_id}")
        form = {
            "csrf_token": csrf_of(page.text),
            "idempotency_key": idempotency_key_of(page.text),
            "decision": "review",
            "action/0/decision": "approve",
            "action/1/decision": "edit",  # the email may not be edited
        }

        # When the cards come back with a decision the email does not allow
        answer = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    # Then it is refused, naming the action, and nothing is recorded
    assert answer.status_code == 422
    assert "send_email: choose approve or reject" in answer.text
    assert events_of(server, thread_id, WorkflowThread.InterruptResumed) == []


def test_the_action_cards_fit_a_320_pixel_screen(server, browser):
    # Given a middleware review, on a 320 px wide screen
    _, interrupt_id = paused(server, graph="echo", values={"payload": MIDDLEWARE_REVIEW})
    page = browser.new_context(viewport={"width": 320, "height": 640}).new_page()

    # When the reviewer opens it and chooses to edit the refund
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    page.locator("#action-0").get_by_label("Edit the arguments").check()

    # Then nothing sticks out sideways
    assert horizontal_overflow(page) == 0
    page.context.close()


def test_a_real_agents_tool_call_runs_with_the_arguments_edited_on_its_card(server, page):
    # Given LangChain's agent proposing a refund of 500, reviewed call by call
    REFUNDS.clear()
    agent = server.sdk("agent")
    agent.threads.create(thread_id="agent-1", metadata={"graph_id": "refund-agent"})
    ask = {"messages": [{"type": "human", "content": "Refund acme", "id": "h-1"}]}
    agent.runs.wait("agent-1", "refund-agent", input=ask)
    (interrupt_id,) = server.store.thread("agent-1").interrupts
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # Then its card offers what the middleware's response schema allows
    card = page.locator("#action-0")
    expect(card.locator("legend").first).to_have_text("Tool issue_refund")
    expect(choices(page, 0)).to_have_text(["Approve", "Edit the arguments", "Reject"])

    # When the reviewer edits the amount
    card.get_by_label("Edit the arguments").check()
    card.get_by_label("amount").fill("50")
    page.get_by_label("Reason for these decisions (optional)").fill("Policy caps at 50")
    page.get_by_role("button", name="Send the decisions").click()

    # Then the tool ran with the edited arguments, once
    expect(page.locator("#recorded-kind")).to_have_text("edit")
    (event,) = events_of(server, "agent-1", WorkflowThread.InterruptResumed)
    agent.runs.join("agent-1", event.run_id)
    assert REFUNDS == [{"customer": "acme", "amount": 50}]
