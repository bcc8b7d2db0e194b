"""Time travel over HTTP on a real server, with httpx and the official langgraph-sdk,
on SQLite and PostgreSQL: history, state at a checkpoint, a version or a moment,
diffs, forks from a checkpoint with their lineage; none of it runs a node.

The story thread runs the seed graph `refund_approval` (request_approval ->
process_refund): an agent asks about $250, a reviewer approves. Its versions:
1 ThreadStarted, 2 InputReceived, 3 NodeCompleted(__start__), 4 InterruptRaised,
5 InterruptResumed, 6 NodeCompleted(request_approval), 7
NodeCompleted(process_refund), 8 ThreadCompleted.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypedDict

import pytest

from domain.graph import END, START, StateGraph
from domain.history.time_travel import versions
from domain.record.thread_uuids import thread_uuid
from domain.types import interrupt
from tests.api.http_harness import server_on

VERSIONS = [
    "ThreadStarted",
    "InputReceived",
    "NodeCompleted",
    "InterruptRaised",
    "InterruptResumed",
    "NodeCompleted",
    "NodeCompleted",
    "ThreadCompleted",
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


def approved_refund(server: Any) -> str:
    """A refund_approval thread: $250 asked for by the agent, approved by the reviewer."""
    agent, reviewer = server.sdk("agent"), server.sdk("reviewer")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund_approval", input={"refund_amount": 250.0, "approved": False})
    reviewer.runs.wait(thread_id, "refund_approval", command={"resume": True})
    return thread_id


def stored(server: Any, thread_id: str) -> list[bytes]:
    return [bytes(e.state) for e in server.store.recorder.select_events(thread_uuid(thread_id))]


# -- the LangGraph-compatible reads and forks, through the SDK -------------------------


def test_history_and_state_at_a_checkpoint_through_the_sdk(server):
    # Given
    thread_id = approved_refund(server)
    agent = server.sdk("agent")

    # When
    history = agent.threads.get_history(thread_id, limit=10)
    states = [agent.threads.get_state(thread_id, checkpoint_id=h["checkpoint_id"]) for h in history]

    # Then
    assert [(h["metadata"]["source"], h["metadata"]["step"]) for h in history] == [
        ("loop", 2),
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
    ]
    assert [s["values"] for s in states] == [h["values"] for h in history]
    assert states[2]["next"] == ["request_approval"]
    assert states[2]["values"] == {"refund_amount": 250.0, "approved": False}


def test_a_run_from_a_checkpoint_forks_and_the_lineage_shows_it_both_ways(server):
    # Given
    thread_id = approved_refund(server)
    agent = server.sdk("agent")
    before_question = agent.threads.get_history(thread_id)[2]["checkpoint_id"]
    before = stored(server, thread_id)

    # When an agent runs from the checkpoint before the question
    result = agent.runs.wait(
        thread_id, "refund_approval", input=None, checkpoint_id=before_question
    )

    # Then a fork asks anew, the source's events are as they were
    assert result["__interrupt__"][0]["value"] == {"question": "Approve a $250.0 refund?"}
    assert stored(server, thread_id) == before
    fork_id = f"{thread_id}~3"
    with server.http("agent") as http:
        source = http.get(f"/threads/{thread_id}/lineage").json()
        fork = http.get(f"/threads/{fork_id}/lineage").json()
        first = http.get(f"/threads/{fork_id}/versions/1").json()
    assert [(f["thread_id"], f["version"]) for f in source["forks"]] == [(fork_id, 3)]
    assert source["forked_from"] is None
    assert fork["forked_from"]["thread_id"] == thread_id
    assert fork["forked_from"]["version"] == 3
    assert fork["forked_from"]["event_hash"] == versions(server.store, thread_id)[2].event_hash
    assert first["event"]["type"] == "ThreadForked"
    assert first["event"]["data"]["source_hash"] == fork["forked_from"]["event_hash"]


def test_an_edit_at_a_checkpoint_forks_and_the_forks_history_leads_back(server):
    # Given
    thread_id = approved_refund(server)
    agent = server.sdk("agent")
    before_question = agent.threads.get_history(thread_id)[2]["checkpoint_id"]
    before = stored(server, thread_id)

    # When the agent edits the state at the checkpoint before the question
    edited = agent.threads.update_state(
        thread_id, {"refund_amount": 90.0}, checkpoint_id=before_question
    )

    # Then a new thread holds the edit, its history leads back, and the source is as it was
    fork_id = edited["configurable"]["thread_id"]
    assert fork_id != thread_id
    assert stored(server, thread_id) == before
    assert agent.threads.get_state(fork_id)["values"]["refund_amount"] == 90.0
    first = agent.threads.get_history(fork_id)[-1]
    assert first["metadata"]["source"] == "fork"
    assert first["parent_checkpoint"]["thread_id"] == thread_id
    assert first["parent_checkpoint"]["checkpoint_id"] == before_question


# -- a version, a moment, a diff ---------------------------------------------------------


def test_the_state_at_each_version_with_its_event(server):
    # Given
    thread_id = approved_refund(server)

    # When
    with server.http("agent") as http:
        bodies = [http.get(f"/threads/{thread_id}/versions/{v}").json() for v in range(1, 9)]

    # Then
    assert [b["event"]["type"] for b in bodies] == VERSIONS
    assert [b["status"] for b in bodies][2:5] == ["running", "interrupted", "running"]
    paused = bodies[3]
    assert paused["values"] == {"refund_amount": 250.0, "approved": False}
    assert paused["next"] == ["request_approval"]
    assert paused["interrupts"][0]["value"] == {"question": "Approve a $250.0 refund?"}
    assert paused["checkpoint_id"] == bodies[2]["event"]["checkpoint_id"]
    assert bodies[7]["values"] == {"refund_amount": 250.0, "approved": True}
    assert bodies[4]["event"]["data"]["resume"] is True
    assert all("actor" not in b["event"]["data"] for b in bodies)  # auditors read who acted
    assert bodies[4]["event"]["prev_hash"] == bodies[3]["event"]["event_hash"]


def test_the_state_at_a_moment_is_the_last_version_recorded_by_then(server):
    # Given
    thread_id = approved_refund(server)
    stamps = [e.timestamp for e in versions(server.store, thread_id)]

    # When
    with server.http("reviewer") as http:
        found = [
            http.get(f"/threads/{thread_id}/as-of", params={"at": t.isoformat()}).json()["version"]
            for t in stamps
        ]
        too_early = http.get(
            f"/threads/{thread_id}/as-of", params={"at": (stamps[0] - timedelta(1)).isoformat()}
        )
        garbled = http.get(f"/threads/{thread_id}/as-of", params={"at": "soon"})

    # Then
    assert found == [max(v for v, t in enumerate(stamps, 1) if t <= moment) for moment in stamps]
    assert too_early.status_code == 404
    assert "did not exist at" in too_early.json()["detail"]
    assert garbled.status_code == 422
    assert too_early.headers["content-type"] == "application/problem+json"


def test_the_diff_between_two_versions_or_checkpoints(server):
    # Given
    thread_id = approved_refund(server)
    with server.http("auditor") as http:
        checkpoint = http.get(f"/threads/{thread_id}/versions/3").json()["event"]["checkpoint_id"]

        # When
        by_version = http.get(f"/threads/{thread_id}/diff", params={"from": 3, "to": 8}).json()
        by_checkpoint = http.get(
            f"/threads/{thread_id}/diff", params={"from": checkpoint, "to": "8"}
        ).json()

    # Then
    assert by_version == by_checkpoint
    assert by_version["changes"] == [
        {"key": "approved", "change": "changed", "old": False, "new": True}
    ]
    assert by_version["next"] == {"from": ["request_approval"], "to": []}
    assert by_version["status"] == {"from": "running", "to": "idle"}


@pytest.mark.parametrize(
    ("path", "status", "detail"),
    [
        ("/threads/{t}/versions/9", 404, "has versions 1 to 8; there is no version 9"),
        ("/threads/{t}/versions/0", 404, "there is no version 0"),
        ("/threads/nope/versions/1", 404, "Thread 'nope' does not exist"),
        ("/threads/{t}/diff?from=1&to=99", 404, "there is no version 99"),
        ("/threads/{t}/diff?from=1&to=zzz", 404, "has no checkpoint 'zzz'"),
        ("/threads/{t}/diff?from=1", 422, "Invalid query.to"),
        ("/threads/nope/diff?from=1&to=2", 404, "Thread 'nope' does not exist"),
        ("/threads/nope/lineage", 404, "Thread 'nope' does not exist"),
        ("/threads/nope/as-of?at=2030-01-01", 404, "Thread 'nope' does not exist"),
    ],
)
def test_reads_that_name_nothing_are_refused_as_problems(server, path, status, detail):
    # Given
    thread_id = approved_refund(server)

    # When
    with server.http("agent") as http:
        response = http.get(path.replace("{t}", thread_id))

    # Then
    assert response.status_code == status
    assert detail in response.json()["detail"]


def test_reading_needs_an_api_key(server):
    # Given
    thread_id = approved_refund(server)

    # When
    with server.http() as anonymous:
        response = anonymous.get(f"/threads/{thread_id}/versions/1")

    # Then
    assert response.status_code == 401


# -- reading runs no node ---------------------------------------------------------------


class Note(TypedDict):
    text: str
    ok: Any


def test_a_thread_of_a_graph_the_server_does_not_serve_reads_without_running_a_node(server):
    # Given a thread recorded by code the server does not have, which counts its runs
    runs: list[str] = []

    def check(state: Note) -> dict[str, Any]:
        runs.append("check")
        return {"ok": interrupt({"check": state["text"]})}

    builder = StateGraph(Note)
    builder.add_node("check", check)
    builder.add_edge(START, "check")
    builder.add_edge("check", END)
    graph = builder.compile(checkpointer=server.store, name="not-served")
    graph.invoke({"text": "hello", "ok": None}, {"configurable": {"thread_id": "unserved"}})
    assert runs == ["check"]
    head = server.head()

    # When it is read in every way
    agent = server.sdk("agent")
    with server.http("agent") as http:
        answers = [http.get(f"/threads/unserved/versions/{v}") for v in range(1, 5)]
        answers.append(http.get("/threads/unserved/diff", params={"from": 1, "to": 4}))
        answers.append(http.get("/threads/unserved/lineage"))
        answers.append(http.get("/threads/unserved/as-of", params={"at": "2100-01-01"}))
    history = agent.threads.get_history("unserved")
    states = [
        agent.threads.get_state("unserved", checkpoint_id=h["checkpoint_id"]) for h in history
    ]

    # Then every read answered, no node ran, nothing was written
    assert [a.status_code for a in answers] == [200] * 7
    assert answers[3].json()["interrupts"][0]["value"] == {"check": "hello"}
    assert [s["values"] for s in states] == [h["values"] for h in history]
    assert runs == ["check"]
    assert server.head() == head
