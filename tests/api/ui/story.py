"""Threads for the UI tests and the screenshots, made through the HTTP API."""

from __future__ import annotations

from typing import Any

from tests.api.http_harness import Server


def paused(
    server: Server, graph: str = "refund", who: str = "agent", values: dict[str, Any] | None = None
) -> tuple[str, str]:
    """A new thread paused at its interrupt: (thread id, interrupt id)."""
    sdk = server.sdk(who)
    thread_id = sdk.threads.create()["thread_id"]
    output = sdk.runs.wait(thread_id, graph, input=values or {"refund_amount": 300.0})
    return thread_id, output["__interrupt__"][0]["id"]


def decided(server: Server, interrupt_id: str, decision: str, who: str = "reviewer") -> dict:
    """Decide through the API and wait for the node to run again; the API's answer."""
    with server.http(who) as client:
        answer = client.post(
            f"/approvals/{interrupt_id}/decision",
            json={"decision": decision, "reason": f"{decision} (scripted)"},
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    server.sdk("agent").runs.join(body["thread_id"], body["run_id"])
    return body


def scripted_history(server: Server) -> dict[str, int]:
    """Five refunds: two approved, one rejected, two still open. The counts it made."""
    interrupts = [paused(server, values={"refund_amount": 120.0 + 50 * n}) for n in range(5)]
    decided(server, interrupts[0][1], "approve")
    decided(server, interrupts[1][1], "approve", who="reviewer2")
    decided(server, interrupts[2][1], "reject")
    return {"raised": 5, "approve": 2, "reject": 1, "decisions": 3, "open": 2}


# What LangChain's HumanInTheLoopMiddleware (batched, its default) puts to a human
MIDDLEWARE_REVIEW = {
    "action_requests": [
        {
            "name": "issue_refund",
            "args": {"customer": "acme", "amount": 500},
            "description": "Refund awaiting review",
        },
        {
            "name": "send_email",
            "args": {"to": "billing@acme.test", "body": "Refunded"},
            "description": "Email awaiting review",
        },
    ],
    "review_configs": [
        {"action_name": "issue_refund", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]},
    ],
}
