"""A legal hold shows on its thread's page in the browser, to anyone who may read the
thread, with who placed it and why; a thread it does not cover shows none."""

from __future__ import annotations

from tests.api.ui.ui_client import UiClient


def paused_refund(server, customer):
    agent = server.sdk("agent")
    thread_id = agent.threads.create(metadata={"customer": customer})["thread_id"]
    agent.runs.wait(thread_id, "refund", input={"refund_amount": 300.0})
    return thread_id


def test_a_held_thread_says_so_on_its_page(server):
    held = paused_refund(server, "globex")
    free = paused_refund(server, "initech")
    with server.http("auditor") as auditor:
        placed = auditor.post(
            "/legal-holds", json={"scope": "metadata:customer=globex", "reason": "case 17"}
        )
    assert placed.status_code == 201, placed.text
    reviewer = UiClient(server.url)
    try:
        assert reviewer.sign_in(server.keys["reviewer"]).status_code == 303
        page = reviewer.get(f"/ui/threads/{held}").text
        other = reviewer.get(f"/ui/threads/{free}").text
    finally:
        reviewer.close()
    assert "Under legal hold hold-1 (metadata:customer=globex), placed by auditor" in page
    assert "case 17" in page
    assert "Under legal hold" not in other
