"""The refund story through the real langgraph-sdk client, on SQLite and PostgreSQL.

An agent starts a refund with the SDK; the run pauses; the interrupt is in
the approval queue; a reviewer decides over HTTP; the thread completes, and
its audit timeline names the reviewer. Every wait is on a run or a position.
"""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from langgraph_sdk import get_client

from tests.api.http_harness import server_on

REFUND_ASSISTANT = "7fdea710-6c69-5a3b-ade4-f5d108e5826e"  # LangGraph's id for "refund"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


def test_the_refund_story_through_the_sdk(server):
    agent = server.sdk("agent")
    # Given the seed graph served as an assistant with LangGraph's own id
    assistants = agent.assistants.search()
    refund = next(a for a in assistants if a["graph_id"] == "refund")
    assert refund["assistant_id"] == REFUND_ASSISTANT
    # When the agent creates a thread and runs a $250 refund
    thread = agent.threads.create(metadata={"case": "story"})
    thread_id = thread["thread_id"]
    result = agent.runs.wait(thread_id, "refund", input={"refund_amount": 250.0})
    # Then the run pauses at the interrupt, as LangGraph's server answers
    (pending,) = result["__interrupt__"]
    assert pending["value"] == {"question": "Approve a $250.0 refund?"}
    assert pending["response_schema"] is None
    assert len(pending["id"]) == 32
    paused = agent.threads.get(thread_id)
    assert paused["status"] == "interrupted"
    assert paused["metadata"] == {
        "case": "story",
        "graph_id": "refund",
        "assistant_id": REFUND_ASSISTANT,
    }
    assert [i["id"] for task in paused["interrupts"].values() for i in task] == [pending["id"]]
    state = agent.threads.get_state(thread_id)
    assert state["next"] == ["check_and_process"]
    server_keys = {key: state["metadata"][key] for key in ("thread_id", "graph_id", "assistant_id")}
    assert server_keys == {
        "thread_id": thread_id,
        "graph_id": "refund",
        "assistant_id": REFUND_ASSISTANT,
    }
    assert state["interrupts"] == [{"id": pending["id"], "value": pending["value"]}]

    # And the reviewer sees it in the approval queue
    with server.http("reviewer") as reviewer:
        queue = reviewer.get("/approvals", params={"wait_for": server.head(), "graph_id": "refund"})
        assert queue.status_code == 200
        rows = {row["interrupt_id"]: row for row in queue.json()["data"]}
        assert rows[pending["id"]]["thread_id"] == thread_id
        assert rows[pending["id"]]["payload"] == pending["value"]
        # When the reviewer approves it
        answer = reviewer.post(
            f"/approvals/{pending['id']}/decision",
            json={"decision": "approve", "reason": "Receipt checked"},
        )
        assert answer.status_code == 200, answer.text
        decision = answer.json()
        position = int(answer.headers["X-Holdpoint-Position"])
        # Then the interrupt leaves the queue (read-your-writes on the position)
        queue = reviewer.get("/approvals", params={"wait_for": position})
        assert pending["id"] not in {row["interrupt_id"] for row in queue.json()["data"]}
    assert decision["decided_by"] == {"id": "reviewer", "role": "reviewer"}
    assert decision["decision"] == "approve"
    assert decision["resume"] is True

    # And the thread completes: the node ran again with the answer
    final = agent.runs.join(thread_id, decision["run_id"])
    assert final == {"refund_amount": 250.0, "outcome": "Refund of $250.0 processed."}
    done = agent.threads.get(thread_id)
    assert done["status"] == "idle"
    assert done["interrupts"] == {}
    assert agent.runs.get(thread_id, decision["run_id"])["status"] == "success"

    # And the audit timeline records the decision with the reviewer's identity
    with server.http("auditor") as auditor:
        audit = auditor.get(f"/threads/{thread_id}/audit").json()
    assert audit["chain"]["ok"] is True
    resumed = [e for e in audit["entries"] if e["event"] == "InterruptResumed"]
    assert len(resumed) == 1
    assert resumed[0]["actor"] == {
        "id": "reviewer",
        "role": "reviewer",
        "authenticated": True,
        "via": "api_key",
    }
    assert resumed[0]["details"]["reason"] == "Receipt checked"
    assert resumed[0]["at"] == decision["decided_at"]
    started = audit["entries"][0]
    assert started["event"] == "ThreadStarted"
    assert started["actor"]["id"] == "agent"
    assert [e["prev_hash"] for e in audit["entries"][1:]] == [
        e["event_hash"] for e in audit["entries"][:-1]
    ]


def test_a_reviewer_resumes_through_the_sdk_and_the_stream_shows_the_steps(server):
    agent, reviewer = server.sdk("agent"), server.sdk("reviewer")
    thread_id = agent.threads.create(graph_id="refund_approval")["thread_id"]
    parts = list(
        agent.runs.stream(
            thread_id,
            "refund_approval",
            input={"refund_amount": 99.0, "approved": False},
            stream_mode=["values", "updates"],
        )
    )
    assert [p.event for p in parts] == ["metadata", "values", "updates", "values"]
    interrupt = parts[2].data["__interrupt__"][0]
    assert interrupt["value"] == {"question": "Approve a $99.0 refund?"}
    assert parts[3].data == {
        "refund_amount": 99.0,
        "approved": False,
        "__interrupt__": [interrupt],
    }
    # The reviewer answers with the SDK's Command(resume=...), streaming updates
    resumed = list(
        reviewer.runs.stream(
            thread_id, "refund_approval", command={"resume": True}, stream_mode="updates"
        )
    )
    assert [p.data for p in resumed[1:]] == [
        {"request_approval": {"approved": True}},
        {"process_refund": {"approved": True}},
    ]
    assert agent.threads.get_state(thread_id)["values"] == {
        "refund_amount": 99.0,
        "approved": True,
    }
    with server.http("auditor") as auditor:
        events = auditor.get(f"/threads/{thread_id}/events").json()["events"]
    (answer,) = [e for e in events if e["type"] == "InterruptResumed"]
    assert answer["data"]["actor"]["id"] == "reviewer"


def test_runs_create_join_get_and_list(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    run = agent.runs.create(thread_id, "refund", input={"refund_amount": 50.0})
    assert run["status"] in ("pending", "running", "success")
    assert run["assistant_id"] == REFUND_ASSISTANT
    output = agent.runs.join(thread_id, run["run_id"])
    assert output == {"refund_amount": 50.0, "outcome": "Refund of $50.0 processed."}
    assert agent.runs.get(thread_id, run["run_id"])["status"] == "success"
    assert [r["run_id"] for r in agent.runs.list(thread_id)] == [run["run_id"]]
    found = agent.threads.search(metadata={"graph_id": "refund"}, status="idle", limit=100)
    assert thread_id in {t["thread_id"] for t in found}


def test_history_and_time_travel(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund_approval", input={"refund_amount": 10.0, "approved": False})
    history = agent.threads.get_history(thread_id)
    assert [h["metadata"]["source"] for h in history] == ["loop", "input"]
    assert history[0]["next"] == ["request_approval"]
    older = agent.threads.get_history(thread_id, before=history[0]["checkpoint"]["checkpoint_id"])
    assert [h["checkpoint_id"] for h in older] == [history[1]["checkpoint_id"]]
    at = agent.threads.get_state(thread_id, checkpoint_id=history[1]["checkpoint_id"])
    assert at["next"] == ["__start__"]
    # An edit from the current checkpoint is recorded on the thread; paused at a hold
    # point, only who may decide it edits (the agent is refused: tests/api/http/test_hold_points.py)
    reviewer = server.sdk("reviewer")
    edited = reviewer.threads.update_state(thread_id, {"refund_amount": 12.0})
    assert edited["checkpoint"]["thread_id"] == thread_id
    assert agent.threads.get_state(thread_id)["values"]["refund_amount"] == 12.0
    # A run from a past checkpoint forks a new thread; the original is untouched
    before = server.event_count(thread_id)
    replay = agent.runs.wait(
        thread_id, "refund_approval", input=None, checkpoint_id=history[0]["checkpoint_id"]
    )
    assert replay["__interrupt__"][0]["value"] == {"question": "Approve a $10.0 refund?"}
    assert server.event_count(thread_id) == before


def test_the_async_client_works_too(server):
    async def story() -> dict:
        client = get_client(url=server.url, api_key=server.keys["agent"])
        thread = await client.threads.create()
        return await client.runs.wait(thread["thread_id"], "refund", input={"refund_amount": 5.0})

    assert asyncio.run(story())["outcome"] == "Refund of $5.0 processed."


def test_stateless_runs_and_if_not_exists(server):
    agent = server.sdk("agent")
    output = agent.runs.wait(None, "refund", input={"refund_amount": 1.0})
    assert output["outcome"] == "Refund of $1.0 processed."
    new_id = f"created-on-run-{uuid4().hex[:8]}"
    output = agent.runs.wait(new_id, "refund", input={"refund_amount": 2.0}, if_not_exists="create")
    assert output["outcome"] == "Refund of $2.0 processed."
    assert agent.threads.get(new_id)["status"] == "idle"


def test_a_failing_node_answers_with_error_as_langgraph_does(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    output = agent.runs.wait(thread_id, "boom", input={"x": 4}, raise_error=False)
    assert output == {"__error__": {"error": "ValueError", "message": "boom at x=4"}}
    thread = agent.threads.get(thread_id)
    assert thread["status"] == "error"
    assert thread["error"] == {"error": "ValueError", "message": "boom at x=4"}
    parts = list(agent.runs.stream(None, "boom", input={"x": 5}))
    assert parts[-1].event == "error"
    assert parts[-1].data == {"error": "ValueError", "message": "boom at x=5"}


def test_parallel_interrupts_are_answered_by_id(server):
    agent, reviewer = server.sdk("agent"), server.sdk("reviewer")
    thread_id = agent.threads.create()["thread_id"]
    paused = agent.runs.wait(thread_id, "parallel", input={"out": []})
    ids = {i["value"]: i["id"] for i in paused["__interrupt__"]}
    assert set(ids) == {"ask left", "ask right"}
    done = reviewer.runs.wait(
        thread_id,
        "parallel",
        command={"resume": {ids["ask left"]: "L", ids["ask right"]: "R"}},
    )
    assert sorted(done["out"]) == ["join", "left=L", "right=R"]


def test_a_batch_of_runs_begins_each_and_a_refused_one_names_itself(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    runs = agent.runs.create_batch(
        [
            {"assistant_id": "refund", "input": {"refund_amount": 5.0}},
            {"assistant_id": "refund", "input": {"refund_amount": 6.0}, "thread_id": thread_id},
        ]
    )
    assert len(runs) == 2
    assert runs[1]["thread_id"] == thread_id
    assert runs[0]["thread_id"] != thread_id  # a stateless run: on a thread of its own
    assert agent.runs.join(thread_id, runs[1]["run_id"])["outcome"] == "Refund of $6.0 processed."
    with server.http("agent") as http:
        refused = http.post(
            "/runs/batch",
            json=[
                {"assistant_id": "refund", "input": {"refund_amount": 1.0}},
                {"assistant_id": "refund", "input": {"refund_amount": 1.0}, "thread_id": "nope"},
            ],
        )
    assert refused.status_code == 404
    detail = refused.json()["detail"]
    assert detail.startswith("Run 1 of the batch: Thread 'nope' not found")
    assert "(begun: " in detail
    assert "none)" not in detail  # the first run was begun, and is named
