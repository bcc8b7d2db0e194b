"""Who saw what, in the browser: the inbox (and its refresh), a decision page, a thread's
page, the dashboard, its download and an evidence export each leave their read on record
with the signed-in principal; the thread's page shows auditors who read the thread; a
visitor who is not signed in leaves nothing."""

from __future__ import annotations

import pytest

from tests.api.ui.ui_client import UiClient, csrf_of


def paused_refund(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    output = agent.runs.wait(thread_id, "refund", input={"refund_amount": 300.0})
    return thread_id, output["__interrupt__"][0]["id"]


def reads_of(server, actor):
    with server.http("auditor") as auditor:
        data = auditor.get("/audit/reads", params={"actor": actor, "limit": 1000}).json()["data"]
    return [(r["kind"], r["target"], r["thread_id"], r["via"]) for r in data]


@pytest.fixture
def signed_in(server):
    clients = []

    def sign_in(who):
        client = UiClient(server.url)
        assert client.sign_in(server.keys[who]).status_code == 303
        clients.append(client)
        return client

    yield sign_in
    for client in clients:
        client.close()


def test_each_page_that_shows_a_payload_the_queue_a_timeline_or_a_report_is_on_record(
    server, signed_in
):
    thread_id, interrupt_id = paused_refund(server)
    # When a reviewer opens the inbox, it refreshes, and they open the decision page
    reviewer = signed_in("reviewer2")
    for path in ("/ui/inbox?graph_id=refund", "/ui/inbox/queue?graph_id=refund"):
        assert reviewer.get(path).status_code == 200
    assert reviewer.get(f"/ui/approvals/{interrupt_id}").status_code == 200
    # Then the inbox and the payload it showed are on record once, through the UI
    assert reads_of(server, "reviewer2") == [
        ("queue", "inbox?graph_id=refund", None, "ui"),
        ("payload", interrupt_id, thread_id, "ui"),
    ]
    # When an auditor opens the thread's page, the dashboard, downloads the report and
    # exports the evidence bundle
    auditor = signed_in("auditor")
    page = auditor.get(f"/ui/threads/{thread_id}")
    assert page.status_code == 200
    assert auditor.get("/ui/dashboard?days=7").status_code == 200
    assert auditor.get("/ui/dashboard/download?days=7&format=csv").status_code == 200
    evidence = auditor.post_form(
        f"/ui/threads/{thread_id}/evidence", {"csrf_token": csrf_of(page.text)}
    )
    assert evidence.status_code == 200, evidence.text
    # Then each is on record
    assert [read for read in reads_of(server, "auditor") if read[0] != "report"] == [
        ("timeline", thread_id, thread_id, "ui"),
        ("export", thread_id, thread_id, "ui"),
    ]
    reports = [read[1] for read in reads_of(server, "auditor") if read[0] == "report"]
    assert reports == ["dashboard?days=7", "dashboard/download?days=7&format=csv"]
    # And the thread's page shows the auditor who read it, and the reviewer's payload read
    again = auditor.get(f"/ui/threads/{thread_id}").text
    section = again[again.index('id="reads"') :]
    assert "reviewer2 (reviewer)" in section
    assert f"payload <code>{interrupt_id}</code>" in section
    assert "auditor (auditor)" in section


def test_a_thread_page_for_a_reader_who_is_no_auditor_shows_no_reads(server, signed_in):
    thread_id, _ = paused_refund(server)
    page = signed_in("agent").get(f"/ui/threads/{thread_id}")
    assert page.status_code == 200
    assert 'id="reads"' not in page.text


def test_a_visitor_who_is_not_signed_in_leaves_no_read(server):
    thread_id, interrupt_id = paused_refund(server)
    head = server.head()
    with UiClient(server.url) as visitor:
        for path in ("/ui/inbox", f"/ui/approvals/{interrupt_id}", f"/ui/threads/{thread_id}"):
            assert visitor.get(path).status_code == 303  # to the sign-in page
    found = server.store.recorder.select_notifications(start=head + 1, limit=100)
    assert [n.topic for n in found] == []
