"""The browser interface over plain HTTP: sessions, cookies, CSRF, and refusals that
are the API's own (same checks, same records). No browser needed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from domain.access.identity import parse_key
from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from service.sessions import session_hash
from tests.api.http.test_access import captured_logs  # noqa: F401 - a fixture
from tests.api.http.test_key_expiry import Later
from tests.api.ui.story import decided, paused
from tests.api.ui.ui_client import UiClient, csrf_of, idempotency_key_of


@pytest.fixture
def ui(server):
    with UiClient(server.url) as client:
        yield client


def refusals(server):
    with server.http("auditor") as auditor:
        return auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]


def decisions_of(server, thread_id):
    events = server.store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptResumed)]


def decision_form(ui, interrupt_id, **fields):
    page = ui.get(f"/ui/approvals/{interrupt_id}")
    assert page.status_code == 200, page.text
    return {
        "csrf_token": csrf_of(page.text),
        "idempotency_key": idempotency_key_of(page.text),
        "reason": "",
        **fields,
    }


def test_a_page_without_a_session_goes_to_sign_in(ui):
    # When a page is asked for without signing in
    answer = ui.get("/ui/inbox?graph_id=refund")

    # Then the browser is sent to the sign-in page, which brings it back afterwards
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/sign-in?next=%2Fui%2Finbox%3Fgraph_id%3Drefund"


def test_the_session_cookie_is_secure_http_only_strict_and_holds_no_key(server, ui):
    # When a reviewer signs in
    answer = ui.sign_in(server.keys["reviewer"])

    # Then they land in the inbox with a session cookie that scripts cannot read
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/inbox"
    (cookie,) = [c for c in ui.set_cookies if c.startswith("holdpoint_session=")]
    flags = [part.strip().lower() for part in cookie.split(";")[1:]]
    assert {"httponly", "secure", "samesite=strict", "path=/ui"} <= set(flags)
    # And the cookie is a random id, not the key or any part of it
    key_id, secret = parse_key(server.keys["reviewer"])
    assert key_id not in cookie
    assert secret not in cookie
    assert ui.get("/ui/inbox").status_code == 200


def test_a_wrong_key_is_refused_and_recorded(server, ui):
    before = len(refusals(server))

    # When someone signs in with a key that does not exist
    answer = ui.sign_in("hp_000000000000_" + "A" * 43)

    # Then the form says so, no session is made, and the refusal is on record
    assert answer.status_code == 401
    assert "Not signed in" in answer.text
    assert "holdpoint_session" not in ui.cookies
    assert [r["reason"] for r in refusals(server)[before:]] == ["unknown_key"]


def test_a_sign_in_without_its_csrf_token_is_refused(server, ui):
    # Given the sign-in page (which sets the form's token cookie)
    ui.get("/ui/sign-in")

    # When the form comes back without the token
    answer = ui.post_form("/ui/sign-in", {"api_key": server.keys["reviewer"]})

    # Then it is refused and nobody is signed in
    assert answer.status_code == 403
    assert "security token (CSRF)" in answer.text
    assert "holdpoint_session" not in ui.cookies


def test_a_decision_without_its_csrf_token_is_refused_and_recorded(server, ui):
    # Given a signed-in reviewer and an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="approve")
    before = len(refusals(server))

    # When the decision is posted without the token, or with another one
    missing = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", {**form, "csrf_token": ""})
    forged = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision", {**form, "csrf_token": "x" * 43}
    )

    # Then both are refused and recorded, and nothing is decided
    assert (missing.status_code, forged.status_code) == (403, 403)
    assert "security token (CSRF)" in missing.text
    assert decisions_of(server, thread_id) == []
    assert [(r["reason"], r["principal_id"]) for r in refusals(server)[before:]] == [
        ("forbidden", "reviewer"),
        ("forbidden", "reviewer"),
    ]


def test_a_form_from_another_site_is_refused(server, ui):
    # Given a signed-in reviewer and an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="approve")

    # When the browser says the form came from another site
    answer = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision",
        form,
        headers={"Origin": "https://evil.example"},
    )

    # Then it is refused
    assert answer.status_code == 403
    assert decisions_of(server, thread_id) == []


def test_a_decision_in_the_browser_is_the_api_decision(server, ui):
    # Given a signed-in reviewer and an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="reject", reason="No receipt")

    # When they reject it, twice (a double click sends the same idempotency key)
    first = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)
    again = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    # Then one decision is recorded, by the key's principal, with the reason
    assert (first.status_code, again.status_code) == (303, 303)
    (recorded,) = decisions_of(server, thread_id)
    assert (recorded.decision, recorded.reason, recorded.actor["id"]) == (
        "reject",
        "No receipt",
        "reviewer",
    )
    assert recorded.idempotency_key == form["idempotency_key"]
    page = ui.get(f"/ui/approvals/{interrupt_id}")
    assert "Decided by <strong>reviewer</strong> (reviewer)" in page.text
    assert 'id="decision-form"' not in page.text


def test_a_role_that_may_not_decide_is_refused_as_by_the_api(server, ui):
    # Given an auditor signed in, and an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["auditor"])
    page = ui.get(f"/ui/approvals/{interrupt_id}")
    before = len(refusals(server))

    # When the auditor posts a decision anyway
    answer = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision",
        {"csrf_token": csrf_of(page.text), "decision": "approve"},
    )

    # Then the API's 403 is shown and recorded, and nothing is decided
    assert page.status_code == 200
    assert "may read this interrupt but not decide it" in page.text
    assert answer.status_code == 403
    assert "which may not decide interrupts" in answer.text
    assert [r["reason"] for r in refusals(server)[before:]] == ["wrong_role"]
    assert decisions_of(server, thread_id) == []


def test_an_agent_cannot_open_the_inbox(server, ui):
    ui.sign_in(server.keys["agent"])

    answer = ui.get("/ui/inbox")

    assert answer.status_code == 403
    assert "may not read the approval queue" in answer.text


def test_a_decided_interrupt_is_refused_with_who_decided(server, ui):
    # Given an interrupt that reviewer decided through the API
    _, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer2"])
    form = decision_form(ui, interrupt_id, decision="approve")
    decided(server, interrupt_id, "approve", who="reviewer")

    # When reviewer2 sends the form they opened before
    answer = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    # Then it is a conflict that names the first reviewer
    assert answer.status_code == 409
    assert "already decided (approve) by reviewer (reviewer)" in answer.text


def test_an_edit_that_is_not_json_is_refused_with_a_clear_message(server, ui):
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="edit", resume='{"amount": 5,}')

    answer = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    assert answer.status_code == 422
    assert "The edited value is not valid JSON" in answer.text
    assert "line 1, column 14" in answer.text
    assert decisions_of(server, thread_id) == []


def test_a_reason_is_required_when_the_graph_asks_for_one(server, ui):
    # Given an interrupt raised with reason_required=True
    thread_id, interrupt_id = paused(server, graph="explained", values={"draft": "Q3 results"})
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="approve")

    # When it is approved without one, then with one
    without = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)
    with_reason = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision", {**form, "reason": "Checked the draft"}
    )

    # Then the first is refused, the second recorded
    assert without.status_code == 422
    assert "Give a reason: this graph asks for one" in without.text
    assert with_reason.status_code == 303
    assert [e.reason for e in decisions_of(server, thread_id)] == ["Checked the draft"]


def test_a_revoked_key_ends_its_sessions_at_once(server, ui):
    # Given a reviewer signed in with a key of their own
    info, key = server.services.keyring.create("reviewer-revoked", "reviewer", note="test")
    ui.sign_in(key)
    assert ui.get("/ui/inbox").status_code == 200
    before = len(refusals(server))

    # When the key is revoked
    server.services.keyring.revoke(info.key_id)

    # Then the next page is refused, recorded, and the session ends
    answer = ui.get("/ui/inbox")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/ui/sign-in?")
    assert "revoked" in answer.headers["location"]
    assert [r["reason"] for r in refusals(server)[before:]] == ["revoked_key"]
    assert ui.get("/ui/inbox").status_code == 303


def test_an_expired_key_ends_its_sessions(server, ui, monkeypatch):
    # Given a reviewer signed in with a key valid for a day
    expiry = datetime.now(UTC) + timedelta(days=1)
    _info, key = server.services.keyring.create("reviewer-expiring", "reviewer", expires_at=expiry)
    ui.sign_in(key)
    assert ui.get("/ui/inbox").status_code == 200
    before = len(refusals(server))

    # When the clock passes its expiry
    monkeypatch.setattr("domain.access.keyring.datetime", Later)

    # Then the next page is refused, recorded, and the session ends
    answer = ui.get("/ui/inbox")
    assert answer.status_code == 303
    assert "expired" in answer.headers["location"]
    assert [r["reason"] for r in refusals(server)[before:]] == ["expired_key"]


def test_sign_out_ends_the_session_on_the_server(server, ui):
    ui.sign_in(server.keys["reviewer"])
    session = ui.cookies["holdpoint_session"]
    page = ui.get("/ui/inbox")

    answer = ui.post_form("/ui/sign-out", {"csrf_token": csrf_of(page.text)})

    assert answer.status_code == 303
    assert "holdpoint_session" not in ui.cookies
    ui.cookies["holdpoint_session"] = session  # the old cookie, put back
    assert ui.get("/ui/inbox").status_code == 303


def test_no_session_id_or_csrf_token_appears_in_a_log_line(server, ui, captured_logs):  # noqa: F811
    # When a reviewer signs in, reads a page, sends a form with a wrong token, signs out
    ui.sign_in(server.keys["reviewer"])
    session = ui.cookies["holdpoint_session"]
    token = csrf_of(ui.get("/ui/inbox").text)
    assert ui.post_form("/ui/sign-out", {"csrf_token": "wrong"}).status_code == 403
    assert ui.post_form("/ui/sign-out", {"csrf_token": token}).status_code == 303

    # Then the requests were logged, without the session id, its hash or its token
    logs = captured_logs()
    assert "/ui/sign-out" in logs
    for secret in (session, session_hash(session), token):
        assert secret not in logs


def test_the_inbox_filters_and_counts(server, ui):
    # Given open interrupts on two graphs
    paused(server, graph="echo", values={"payload": {"question": "Echo this?"}})
    ui.sign_in(server.keys["reviewer"])

    # When the inbox is filtered on the echo graph
    page = ui.get("/ui/inbox", params={"graph_id": "echo", "sort": "newest"})

    # Then only echo interrupts are listed and counted
    assert page.status_code == 200
    assert "Echo this?" in page.text
    assert "Approve a $" not in page.text
    assert " open matching</span>" in page.text


def test_evidence_and_dashboard_need_the_audit_role(server, ui):
    thread_id, _ = paused(server)
    ui.sign_in(server.keys["reviewer"])

    dashboard = ui.get("/ui/dashboard")
    thread = ui.get(f"/ui/threads/{thread_id}")

    assert dashboard.status_code == 403
    assert thread.status_code == 200
    assert "Export evidence bundle" not in thread.text
    assert "for auditors" in thread.text


def test_the_ui_is_outside_the_api_document_and_unknown_pages_are_pages(server, ui):
    # Given a signed-in reviewer
    ui.sign_in(server.keys["reviewer"])

    # When they open /ui, a page that does not exist, and the API's document
    root = ui.get("/ui")
    missing = ui.get("/ui/no-such-page")
    with server.http() as anonymous:
        paths = anonymous.get("/openapi.json").json()["paths"]

    # Then /ui leads to the inbox, the unknown page is a 404 page, the API lists no page
    assert root.status_code == 303
    assert root.headers["location"] == "/ui/inbox"
    assert missing.status_code == 404
    assert "No page /ui/no-such-page here" in missing.text
    assert missing.headers["content-type"].startswith("text/html")
    assert not [path for path in paths if path.startswith("/ui")]


def test_pages_load_nothing_from_elsewhere(server, ui):
    ui.sign_in(server.keys["admin"])

    page = ui.get("/ui/inbox")

    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "http://" not in page.text
    assert "https://" not in page.text


def test_the_dashboard_period_picker_refuses_bad_dates_clearly(server, ui):
    ui.sign_in(server.keys["auditor"])

    bad = ui.get("/ui/dashboard", params={"since": "yesterday"})
    backwards = ui.get("/ui/dashboard", params={"since": "2026-03-02", "until": "2026-03-01"})
    chosen = ui.get("/ui/dashboard", params={"since": "2026-03-01", "until": "2026-03-01"})

    assert bad.status_code == 422
    assert "Invalid from: &#39;yesterday&#39; is not a date like 2026-03-01" in bad.text
    assert backwards.status_code == 422
    assert "&#39;from&#39; must be on or before &#39;to&#39;" in backwards.text
    assert chosen.status_code == 200
    assert 'data-key="period.since">2026-03-01T00:00:00.000000Z' in chosen.text


DIGEST = re.compile(r'name="payload_digest" value="([^"]*)"')


def test_a_decision_in_the_browser_binds_to_the_payload_the_page_showed(server, ui):
    # Given the page of an open interrupt
    thread_id, interrupt_id = paused(server)
    ui.sign_in(server.keys["reviewer"])
    page = ui.get(f"/ui/approvals/{interrupt_id}")
    [shown] = set(DIGEST.findall(page.text))  # each of its forms carries it
    assert shown == question_digest({"question": "Approve a $300.0 refund?"})
    form = decision_form(ui, interrupt_id, decision="approve", payload_digest=shown)
    before = len(refusals(server))

    # When the form comes back naming another payload than the interrupt asks
    other = question_digest({"question": "Approve a $3.0 refund?"})
    refused = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision", {**form, "payload_digest": other}
    )
    accepted = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)

    # Then it is refused with the API's 409, on record; the page's own digest is accepted
    assert refused.status_code == 409
    assert other in refused.text
    assert [r["reason"] for r in refusals(server)[before:]] == ["question_changed"]
    assert accepted.status_code == 303
    [recorded] = decisions_of(server, thread_id)
    assert recorded.digest == shown


def test_the_decision_page_counts_the_approvals_of_four_eyes(server, ui):
    # Given an interrupt that needs two approvals, approved once
    _, interrupt_id = paused(server, graph="four_eyes", values={"amount": 900.0})
    ui.sign_in(server.keys["reviewer"])
    form = decision_form(ui, interrupt_id, decision="approve")

    # When
    first = ui.post_form(f"/ui/approvals/{interrupt_id}/decision", form)
    page = ui.get(f"/ui/approvals/{interrupt_id}")

    # Then it is still open, 1 of 2, and the same reviewer is offered no second approval,
    # and refused one sent anyway
    assert first.status_code == 303
    assert "1 of 2 approvals: reviewer" in page.text
    assert 'id="decision-form"' not in page.text
    again = ui.post_form(
        f"/ui/approvals/{interrupt_id}/decision",
        {**form, "idempotency_key": "ui-second-approval"},
    )
    assert again.status_code == 403
    assert "already approved" in again.text


def test_the_inbox_shows_one_of_two_approvals(server, ui):
    # Given a four-eyes interrupt approved once, through the API
    _, interrupt_id = paused(server, graph="four_eyes", values={"amount": 700.0})
    with server.http("reviewer") as reviewer:
        reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})

    # When another reviewer opens the inbox
    ui.sign_in(server.keys["reviewer2"])
    inbox = ui.get("/ui/inbox", params={"graph_id": "four_eyes"})

    # Then
    assert f'id="approvals-{interrupt_id}">1 of 2 approvals' in inbox.text
