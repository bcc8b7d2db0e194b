"""The browser interface end to end: a real server, a real (headless) Chromium.

Waits are on the page's DOM (Playwright's auto-waiting `expect`), never on time.
"""

from __future__ import annotations

import os

import pytest

from tests.api.http_harness import running_server
from tests.api.ui.accessibility import accessible_context, axe_violations
from tests.api.ui.browser import horizontal_overflow, sign_in
from tests.api.ui.story import decided, paused, scripted_history

if os.environ.get("CI", "").lower() != "true":  # in CI a missing Playwright fails collection
    pytest.importorskip("playwright")
from playwright.sync_api import expect


def refusals(server):
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def test_a_new_interrupt_appears_is_approved_and_leaves_the_inbox(server, context):
    # Given a reviewer looking at the inbox in one tab
    inbox = context.new_page()
    sign_in(inbox, server.url, server.keys["reviewer"])
    inbox.evaluate("window.notReloaded = true")

    # When an agent's thread pauses for a human
    thread_id, interrupt_id = paused(server, values={"refund_amount": 275.0})

    # Then it appears in the inbox without a reload
    item = inbox.locator(f'[data-interrupt="{interrupt_id}"]')
    expect(item).to_be_visible()
    expect(item).to_contain_text("Approve a $275.0 refund?")

    # When the reviewer opens it in another tab and approves it with a reason
    decision = context.new_page()
    decision.goto(f"{server.url}/ui/approvals/{interrupt_id}")
    expect(decision.locator("#payload")).to_contain_text('"question": "Approve a $275.0 refund?"')
    decision.get_by_label("Reason (optional)").fill("Receipt checked")
    decision.get_by_role("button", name="Approve", exact=True).click()

    # Then the page says who decided, and the thread ran to its end
    expect(decision.locator("#decided-by")).to_contain_text("Decided by reviewer (reviewer)")
    expect(decision.locator("#decided-by")).to_contain_text("approve")
    expect(decision.locator("#thread-status")).to_have_text("completed")
    # And it leaves the inbox in the first tab, still without a reload
    expect(item).to_have_count(0)
    assert inbox.evaluate("window.notReloaded") is True
    # And the audit record names the reviewer, the decision and the reason
    with server.http("auditor") as auditor:
        audit = auditor.get(f"/threads/{thread_id}/audit").json()
    resumed = [e for e in audit["entries"] if e["event"] == "InterruptResumed"]
    assert [
        (e["actor"]["id"], e["details"]["decision"], e["details"]["reason"]) for e in resumed
    ] == [("reviewer", "approve", "Receipt checked")]


def test_the_principal_who_started_a_thread_is_refused_and_the_refusal_recorded(server, page):
    # Given a thread that the admin started
    thread_id, interrupt_id = paused(server, who="admin")
    before = len(refusals(server))

    # When the admin opens it in the browser
    sign_in(page, server.url, server.keys["admin"], f"/ui/approvals/{interrupt_id}")

    # Then the page offers no decision, and says why
    expect(page.locator("#refusal")).to_contain_text("separation of duties")
    expect(page.locator("#decision-form")).to_have_count(0)
    # And a decision sent anyway, in the same session, is refused and recorded
    token = page.locator('input[name="csrf_token"]').first.input_value()
    sent = page.request.post(
        f"{server.url}/ui/approvals/{interrupt_id}/decision",
        form={"csrf_token": token, "decision": "approve"},
    )
    assert sent.status == 403
    assert server.store.thread(thread_id).interrupts.get(interrupt_id) is not None
    recorded = refusals(server)[before:]
    assert [(r["reason"], r["principal_id"], r["target"]) for r in recorded] == [
        ("separation_of_duties", "admin", interrupt_id)
    ]
    assert recorded[0]["action"] == f"POST /ui/approvals/{interrupt_id}/decision"


def test_a_second_reviewer_sees_who_decided_and_cannot_decide_again(server, browser):
    # Given a second reviewer who opened the interrupt before the first one decided it
    _, interrupt_id = paused(server)
    second = browser.new_context().new_page()
    sign_in(second, server.url, server.keys["reviewer2"], f"/ui/approvals/{interrupt_id}")
    decided(server, interrupt_id, "reject", who="reviewer")

    # When the second reviewer approves from the stale page
    second.get_by_role("button", name="Approve", exact=True).click()

    # Then the answer is refused, saying who decided, and no form is offered any more
    expect(second.locator("#decision-error")).to_contain_text(
        "already decided (reject) by reviewer"
    )
    expect(second.locator("#decided-by")).to_contain_text("Decided by reviewer (reviewer)")
    expect(second.locator("#decision-form")).to_have_count(0)

    # And opening it afresh shows the same
    second.goto(f"{server.url}/ui/approvals/{interrupt_id}")
    expect(second.locator("#decided-by")).to_contain_text("reject")
    expect(second.locator("#decision-form")).to_have_count(0)
    second.context.close()


def test_an_edited_value_must_be_json(server, page):
    # Given an open interrupt
    _, interrupt_id = paused(server)
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)

    # When the reviewer writes an edit that is not JSON and sends it
    page.get_by_text("Edit the value instead (JSON)").click()
    page.get_by_label('Value the node resumes with, for "Approve with edits"').fill("{amount: 5")
    page.get_by_role("button", name="Approve with edits").click()

    # Then it is caught before it is sent, with a clear message, the text kept
    expect(page.locator("#resume-error")).to_contain_text("Not valid JSON")
    expect(page.locator("#resume")).to_have_value("{amount: 5")
    assert sent == []
    expect(page.locator("#edit-form")).to_be_visible()


def test_a_form_without_its_csrf_token_is_refused(server, page):
    # Given a reviewer on a decision page
    _, interrupt_id = paused(server)
    sign_in(page, server.url, server.keys["reviewer"], f"/ui/approvals/{interrupt_id}")

    # When the form goes out without its CSRF token
    page.locator('#decision-form input[name="csrf_token"]').evaluate("(input) => input.remove()")
    page.get_by_role("button", name="Approve", exact=True).click()

    # Then it is refused and the interrupt stays open
    expect(page.locator("#error-detail")).to_contain_text("security token (CSRF)")
    page.goto(f"{server.url}/ui/approvals/{interrupt_id}")
    expect(page.locator("#decision-form")).to_be_visible()


def test_the_thread_page_shows_the_audit_trail_state_and_chain(server, page):
    # Given a decided thread
    thread_id, interrupt_id = paused(server)
    decided(server, interrupt_id, "approve")

    # When an auditor opens it
    sign_in(page, server.url, server.keys["auditor"], f"/ui/threads/{thread_id}")

    # Then the timeline has actors and hashes, the chain is verified
    expect(page.locator("#chain-status")).to_contain_text("Verified")
    resumed = page.locator('.event[data-event="InterruptResumed"]')
    expect(resumed).to_contain_text("by reviewer")
    (event,) = [
        e for e in server.store.thread_events(thread_id) if type(e).__name__ == "InterruptResumed"
    ]
    expect(resumed.locator(".hash")).to_contain_text(event.event_hash)
    # And a past version shows its state and the diff from the one before
    page.get_by_label("Version").select_option("2")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#state h2")).to_have_text("State at version 2")
    expect(page.locator("#state-diff")).to_be_visible()
    # And the evidence bundle downloads
    with page.expect_download() as download:
        page.get_by_role("button", name="Export evidence bundle (JSON)").click()
    assert download.value.suggested_filename == f"evidence-{thread_id}.json"


def test_the_dashboard_shows_the_counts_of_a_scripted_history(tmp_path, browser):
    # Given a fresh server with a scripted history
    with running_server(f"sqlite:///{tmp_path / 'holdpoint.db'}") as fresh:
        counts = scripted_history(fresh)
        page = browser.new_context().new_page()

        # When an auditor opens the oversight dashboard
        sign_in(page, fresh.url, fresh.keys["auditor"], "/ui/dashboard")

        # Then its figures are those of the history
        def figure(key):
            return page.locator(f'[data-key="{key}"]')

        expect(figure("interrupts_raised.value")).to_have_text(str(counts["raised"]))
        expect(figure("decisions.value")).to_have_text(str(counts["decisions"]))
        expect(figure("decisions.by_kind.approve")).to_have_text(str(counts["approve"]))
        expect(figure("decisions.by_kind.reject")).to_have_text(str(counts["reject"]))
        expect(page.locator("#report svg").first).to_be_visible()
        # And the report downloads as CSV
        with page.expect_download() as download:
            page.locator("#download-csv").click()
        assert download.value.suggested_filename.endswith(".csv")
        page.context.close()


@pytest.mark.parametrize(
    "where", ["inbox", "decision", "thread", "dashboard", "drill-down", "threads"]
)
def test_pages_fit_a_320_pixel_screen(server, browser, where):
    # Given an open interrupt on a 320 px wide screen
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": {"note": "x" * 500}})
    paths = {
        "inbox": "/ui/inbox",
        "decision": f"/ui/approvals/{interrupt_id}",
        "thread": f"/ui/threads/{thread_id}",
        "dashboard": "/ui/dashboard",
        "drill-down": "/ui/dashboard/list?figure=backlog",
        "threads": "/ui/threads",
    }
    page = browser.new_context(viewport={"width": 320, "height": 640}).new_page()

    # When the admin opens the page
    sign_in(page, server.url, server.keys["admin"], paths[where])
    expect(page.locator("h1")).to_be_visible()

    # Then nothing sticks out sideways
    assert horizontal_overflow(page) == 0
    page.context.close()


def test_sign_out_ends_the_session_on_the_server(server, context, page):
    # Given a signed-in reviewer, and their session cookie
    sign_in(page, server.url, server.keys["reviewer"])
    (session,) = [c for c in context.cookies() if c["name"] == "holdpoint_session"]

    # When they sign out
    page.get_by_role("button", name="Sign out").click()

    # Then the cookie is gone, and the inbox asks to sign in
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert [c for c in context.cookies() if c["name"] == "holdpoint_session"] == []
    # And the old cookie, put back, opens nothing: the session ended on the server
    context.add_cookies([session])
    page.goto(f"{server.url}/ui/inbox")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


@pytest.mark.parametrize(
    "where",
    ["sign-in", "inbox", "decision", "thread", "dashboard", "drill-down", "threads", "recorded"],
)
def test_axe_core_finds_no_wcag_violation_on_each_page(server, browser, where):
    # Given an open interrupt, and a page of each kind, as an admin sees it
    thread_id, interrupt_id = paused(server, graph="echo", values={"payload": {"note": "x"}})
    paths = {
        "inbox": "/ui/inbox",
        "decision": f"/ui/approvals/{interrupt_id}",
        "thread": f"/ui/threads/{thread_id}",
        "dashboard": "/ui/dashboard",
        "drill-down": "/ui/dashboard/list?figure=backlog",
        "threads": "/ui/threads",
    }
    if where == "recorded":  # what a decision recorded: the page after the decision form
        version = decided(server, interrupt_id, "approve")["event"]["version"]
        paths[where] = f"/ui/approvals/{interrupt_id}/recorded?version={version}"
    context = accessible_context(browser)
    page = context.new_page()
    if where == "sign-in":
        page.goto(f"{server.url}/ui/inbox")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    else:
        sign_in(page, server.url, server.keys["admin"], paths[where])
        expect(page.locator("h1")).to_be_visible()

    # Then axe-core finds nothing against WCAG 2.0 and 2.1, A and AA
    assert axe_violations(page) == []
    context.close()
