"""A thread's stream (`threads.join_stream`, GET /threads/{id}/stream), as LangGraph's
server streams a thread: the events of every run on it from the join on, each run's end
marked, resumable after any event's id; and `DELETE /threads/{id}` refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.http_harness import running_server

REFUND = {"refund_amount": 120.0, "approved": False}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


def sse(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The events of a stream as they come: their fields, `data` read as JSON."""
    fields: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "event" in fields:
                yield fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = json.loads(value) if name == "data" else value


def until_runs_end(events: Iterator[dict[str, Any]], runs: int) -> list[dict[str, Any]]:
    """The events up to the end of the `runs`-th run."""
    seen: list[dict[str, Any]] = []
    for item in events:
        seen.append(item)
        if item["data"] == {"status": "run_done", "run_id": item["data"].get("run_id")}:
            runs -= 1
            if runs == 0:
                return seen
    raise AssertionError(f"the stream ended before its runs did: {seen}")


def paused_and_resumed(server, thread_id: str) -> tuple[str, str]:
    """A run that pauses at the refund's interrupt, then a reviewer's run that resumes it."""
    first = server.sdk("agent").runs.wait(thread_id, "refund_approval", input=REFUND)
    assert "__interrupt__" in first
    runs = server.sdk("agent").runs.list(thread_id)
    resumed = server.sdk("reviewer").runs.create(
        thread_id, "refund_approval", command={"resume": True}
    )
    return runs[0]["run_id"], resumed["run_id"]


def test_a_joined_thread_streams_each_run_to_come_and_marks_its_end(server):
    thread_id = server.sdk("agent").threads.create()["thread_id"]
    with (
        server.http("auditor") as http,
        http.stream("GET", f"/threads/{thread_id}/stream") as joined,
    ):
        # Given a stream joined on a thread, when two runs go on it
        assert joined.headers["x-accel-buffering"] == "no"
        first, second = paused_and_resumed(server, thread_id)
        events = until_runs_end(sse(joined), runs=2)
    # Then it has each run's events, in their modes, and each run's start and end
    names = [(e["event"], e["id"]) for e in events]
    assert names[0] == ("metadata", f"{first}:0")
    assert events[0]["data"] == {"run_id": first, "attempt": 1}
    end_first = names.index(("metadata", f"{first}:end"))
    assert {name for name, _ in names[1:end_first]} == {"values"}
    assert names[end_first + 1] == ("metadata", f"{second}:0")
    assert names[-1] == ("metadata", f"{second}:end")
    assert events[-1]["data"] == {"status": "run_done", "run_id": second}
    # The ids number each run's events as the run's own stream does
    numbers = [int(i.rpartition(":")[2]) for _, i in names[1:end_first]]
    assert numbers == sorted(set(numbers))
    assert numbers[0] >= 1
    last_values = [e for e in events if e["event"] == "values"][-1]["data"]
    assert last_values["approved"] is True


def test_a_thread_stream_resumes_after_its_last_event_id_with_the_sdk(server):
    thread_id = server.sdk("agent").threads.create()["thread_id"]
    first, second = paused_and_resumed(server, thread_id)
    server.sdk("agent").runs.join(thread_id, second)
    reader = server.sdk("auditor")
    # Given a client that had the first run's start
    parts = reader.threads.join_stream(thread_id, last_event_id=f"{first}:0")
    # When it resumes, then it gets the rest of that run and the run after it
    seen = []
    for part in parts:
        seen.append((part.event, part.id))
        if part.id == f"{second}:end":
            break
    parts.close()  # the stream never ends of itself: the client drops it
    assert seen[0][0] == "values"
    assert seen[0][1].startswith(f"{first}:")
    assert ("metadata", f"{first}:end") in seen
    assert seen[seen.index(("metadata", f"{first}:end")) + 1] == ("metadata", f"{second}:0")
    # And resumed after a run's end, the next run is first
    after_end = reader.threads.join_stream(thread_id, last_event_id=f"{first}:end")
    assert next(after_end).id == f"{second}:0"
    after_end.close()


def test_lifecycle_streams_only_each_runs_start_and_end(server):
    thread_id = server.sdk("agent").threads.create()["thread_id"]
    first, second = paused_and_resumed(server, thread_id)
    server.sdk("agent").runs.join(thread_id, second)
    path = f"/threads/{thread_id}/stream"
    headers = {"Last-Event-ID": f"{first}:0"}
    with (
        server.http("auditor") as http,
        http.stream("GET", path, params={"stream_modes": "lifecycle"}, headers=headers) as lived,
    ):
        events = until_runs_end(sse(lived), runs=2)
    assert [(e["event"], e["id"]) for e in events] == [
        ("metadata", f"{first}:end"),
        ("metadata", f"{second}:0"),
        ("metadata", f"{second}:end"),
    ]


def test_a_thread_stream_is_refused_modes_it_lacks_bad_ids_and_unknown_threads(server):
    thread_id = server.sdk("agent").threads.create()["thread_id"]
    path = f"/threads/{thread_id}/stream"
    with server.http("auditor") as http:
        state_update = http.get(path, params={"stream_mode": "state_update"})
        assert state_update.status_code == 422
        assert "/events" in state_update.json()["detail"]
        unknown = http.get(path, params={"stream_modes": "run_modes,values"})
        assert unknown.status_code == 422
        assert "'values'" in unknown.json()["detail"]
        bad_id = http.get(path, headers={"Last-Event-ID": "17"})
        assert bad_id.status_code == 422
        assert "<run id>:<number>" in bad_id.json()["detail"]
        assert http.get("/threads/no-such-thread/stream").status_code == 404
    with server.http() as anonymous:
        assert anonymous.get(path).status_code == 401


def test_deleting_a_thread_is_refused_and_changes_nothing(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund_approval", input=REFUND)
    before = server.event_count(thread_id)
    with server.http("agent") as http:
        refused = http.delete(f"/threads/{thread_id}")
    assert refused.status_code == 405
    assert refused.json()["type"].endswith("append-only")
    assert "retention" in refused.json()["detail"]
    assert f"/threads/{thread_id}/cancel" in refused.json()["detail"]
    assert server.event_count(thread_id) == before
    assert agent.threads.get(thread_id)["status"] == "interrupted"


def test_a_run_created_for_later_does_not_hold_up_the_runs_before_it(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, "refund", input={"refund_amount": 1.0})  # the thread exists
    with (
        server.http("auditor") as http,
        http.stream("GET", f"/threads/{thread_id}/stream") as joined,
    ):
        # Given a run for a second from now, and then one for now
        later = agent.runs.create(
            thread_id, "refund", input={"refund_amount": 2.0}, after_seconds=1
        )
        now = agent.runs.create(thread_id, "refund", input={"refund_amount": 3.0})
        events = until_runs_end(sse(joined), runs=2)
    # Then the stream has the run for now first, then the later one once it ran
    ends = [e["data"]["run_id"] for e in events if e["data"].get("status") == "run_done"]
    assert ends == [now["run_id"], later["run_id"]]
