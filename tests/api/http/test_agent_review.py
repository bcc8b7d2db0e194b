"""LangChain's human-in-the-loop middleware, first class: given a served agent
(`create_agent` with `HumanInTheLoopMiddleware`), when it proposes a tool call, then the
queue shows the call as an action to review, a reviewer's decision over /approvals takes
the middleware's shapes (approve, edit, reject, respond) within what the action allows,
the tool runs as decided, and the audit timeline shows who decided, the arguments the
agent proposed and those the reviewer put in their place."""

from __future__ import annotations

from typing import Any

import pytest

from service.langgraph_app import LangGraphApp
from tests.api.http_harness import Server, postgres_schema_url, running_server
from tests.saver.langgraph_graphs import REFUNDS, refund_agent

GRAPH = "refund-agent"
ASK = {"messages": [{"type": "human", "content": "Refund acme", "id": "h-1"}]}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    def graphs(store: Any) -> dict[str, Any]:
        return {GRAPH: LangGraphApp(refund_agent(), GRAPH, store)}

    REFUNDS.clear()
    if request.param == "sqlite":
        with running_server(f"sqlite:///{tmp_path / 'h.db'}", extra=graphs) as started:
            yield started
        return
    with postgres_schema_url() as url, running_server(url, extra=graphs) as started:
        yield started


def proposed(server: Server, thread_id: str = "a-1") -> dict[str, Any]:
    client = server.sdk("agent")
    client.threads.create(thread_id=thread_id, metadata={"graph_id": GRAPH})
    client.runs.wait(thread_id, GRAPH, input=ASK)
    with server.http("reviewer") as reviewer:
        [item] = reviewer.get("/approvals").json()["data"]
    return item


def test_the_queue_shows_the_proposed_call_as_an_action_to_review(server):
    item = proposed(server)

    assert item["actions"] == [
        {
            "name": "issue_refund",
            "args": {"customer": "acme", "amount": 500},
            "description": item["actions"][0]["description"],
            "allowed_decisions": ["approve", "edit", "reject"],
        }
    ]
    assert item["actions"][0]["description"].startswith("Refund awaiting review")


def test_an_edit_runs_the_tool_with_the_edited_arguments_and_the_timeline_shows_both(server):
    item = proposed(server)

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(
            f"/approvals/{item['interrupt_id']}/decision",
            json={
                "decision": "edit",
                "resume": {"customer": "acme", "amount": 50},  # the edited call's arguments
                "reason": "Policy caps at 50",
            },
        )
        assert decided.status_code == 200, decided.text
        reviewer.get(f"/threads/a-1/runs/{decided.json()['run_id']}/join")
    with server.http("auditor") as auditor:
        timeline = auditor.get("/threads/a-1/audit").json()

    assert REFUNDS == [{"customer": "acme", "amount": 50}]
    with server.http("auditor") as auditor:
        report = auditor.get("/reports/oversight").json()
    assert {k: v for k, v in report["reviewed_actions"].items() if k != "how"} == {
        "value": 1,
        "by_decision": {"edit": 1},
        "by_tool": {"issue_refund": {"edit": 1}},
        "edited": 1,
    }
    [answer] = [e for e in timeline["entries"] if e["event"] == "InterruptResumed"]
    assert answer["actor"]["id"] == "reviewer"
    assert answer["details"]["decision"] == "edit"
    assert answer["details"]["actions"] == [
        {
            "name": "issue_refund",
            "args": {"customer": "acme", "amount": 500},
            "decision": "edit",
            "edited_args": {"customer": "acme", "amount": 50},
            "message": None,
        }
    ]


def test_a_reject_runs_nothing_and_tells_the_agent_why(server):
    item = proposed(server)

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(
            f"/approvals/{item['interrupt_id']}/decision",
            json={"decision": "reject", "reason": "Not our customer"},
        )
        run = reviewer.get(f"/threads/a-1/runs/{decided.json()['run_id']}/join").json()

    assert REFUNDS == []
    tool_message = next(m for m in run["messages"] if m["type"] == "tool")
    assert "Not our customer" in tool_message["content"]


def test_a_decision_the_action_does_not_allow_is_a_422_and_records_nothing(server):
    item = proposed(server)
    before = server.event_count("a-1")

    with server.http("reviewer") as reviewer:
        refused = reviewer.post(
            f"/approvals/{item['interrupt_id']}/decision",
            json={"decision": "respond", "resume": "It is done"},
        )

    assert refused.status_code == 422
    assert "not allowed for action 'issue_refund'" in refused.json()["detail"]
    assert server.event_count("a-1") == before


def test_the_middlewares_own_answer_is_taken_as_it_is(server):
    item = proposed(server)
    answer = {"decisions": [{"type": "approve"}]}

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(
            f"/approvals/{item['interrupt_id']}/decision",
            json={"decision": "approve", "resume": answer},
        )
        reviewer.get(f"/threads/a-1/runs/{decided.json()['run_id']}/join")

    assert decided.status_code == 200, decided.text
    assert REFUNDS == [{"customer": "acme", "amount": 500}]
