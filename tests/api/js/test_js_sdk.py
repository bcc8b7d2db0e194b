"""LangGraph's JS SDK, from Node, drives Holdpoint with the calls Agent Chat UI's
`useStream` and Agent Inbox make: a thread, a run streamed to its interrupt, the state
with it, a search (sorted too), a dropped stream joined again after its last event, the
reviewer's resume; on a real LangGraph graph a stream of `values` and `messages-tuple`,
Agent Inbox's resume (a list of `{type, args}`) streamed as `events`, and a copy; "mark as
resolved" (`updateState` as `__end__`); and the stop button (`runs.cancel`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.api.http.test_langgraph_served import langgraph_graphs
from tests.api.http_harness import running_server
from tests.api.js.js_sdk import require_js_sdk, run_script
from tests.service.test_run_cancel import Gate, native_graph

GATE = Gate()


def graphs(store: Any) -> dict[str, Any]:
    return {**langgraph_graphs(store), "steps": native_graph(store, GATE)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_js_sdk()
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}", extra=graphs) as running:
        yield running
    GATE.released.set()


def release_once_cancelled(server) -> threading.Thread:
    """Lets the node at work finish once its run has been asked to stop (runs.cancel)."""

    def watch() -> None:
        assert GATE.entered.wait(60)
        deadline = time.monotonic() + 60
        while not any(b.cancel for b in server.services.runs.held_runs()):
            assert time.monotonic() < deadline, "the run at work was never cancelled"
        GATE.released.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_the_js_sdk_runs_the_refund_story(server):
    watcher = release_once_cancelled(server)
    seen = run_script(
        "sdk_calls.mjs",
        {
            "HOLDPOINT_URL": server.url,
            "AGENT_KEY": server.keys["agent"],
            "REVIEWER_KEY": server.keys["reviewer"],
        },
    )
    assert seen["info"]["flags"]["assistants"] is True
    # The run streamed to its interrupt, each event numbered (JS sends 120.0 as 120)
    started = seen["started"]
    assert [p["event"] for p in started] == ["metadata", "values", "updates", "values"]
    assert [p.get("id") for p in started[1:]] == ["1", "2", "3"]
    (interrupt,) = started[2]["data"]["__interrupt__"]
    assert interrupt["value"] == {"question": "Approve a $120 refund?"}
    # The state shows the pending interrupt, and the search finds the thread
    (task,) = seen["paused"]["tasks"]
    assert task["interrupts"][0]["id"] == interrupt["id"]
    assert [t["thread_id"] for t in seen["found"]] == [seen["threadId"]]
    # A stream joined again after its first event gets the rest, the same
    assert [(p["event"], p.get("id")) for p in seen["rejoined"][1:]] == [
        (p["event"], p["id"]) for p in started[2:]
    ]
    # The reviewer's resume ran the approval and the refund
    assert [p["data"] for p in seen["resumed"][1:]] == [
        {"request_approval": {"approved": True}},
        {"process_refund": {"approved": True}},
    ]
    assert seen["done"]["values"] == {"refund_amount": 120, "approved": True}
    assert seen["done"]["next"] == []
    assert [t["thread_id"] for t in seen["newestFirst"]] == [seen["threadId"]]
    # useStream's modes on a real LangGraph graph: values, and messages as tuples
    chatted = seen["chatted"]
    assert {p["event"] for p in chatted[1:]} <= {"values", "messages"}
    assert chatted[-1]["data"]["__interrupt__"][0]["value"]["amount"] == 300
    # Agent Inbox's answer, a list of {type, args}, streamed as LangChain's events
    assert {p["event"] for p in seen["answered"][1:]} == {"events"}
    assert seen["chatDone"]["next"] == []
    # A copy of it (threads.copy) lists the same checkpoints
    assert seen["chatCopy"] not in (seen["threadId"], None)
    assert seen["copyHistory"] == seen["chatHistory"]
    assert len(seen["chatHistory"]) > 2
    # "Mark as resolved" is the reviewer's cancellation; the stop button stopped the run
    assert seen["resolved"]["status"] == "cancelled"
    assert seen["stopped"]["status"] == "interrupted"
    watcher.join(10)
    # The memory store, crons and a thread's stream, as LangGraph's server answers them
    assert (seen["item"]["value"], seen["item"]["createdAt"]) == (
        {"theme": "dark"},
        seen["item"]["created_at"],
    )
    assert [i["key"] for i in seen["items"]["items"]] == ["prefs"]
    assert seen["cron"]["schedule"] == "0 9 * * 1-5"
    assert [c["cron_id"] for c in seen["crons"]] == [seen["cron"]["cron_id"]]
    run_id = seen["started"][0]["data"]["run_id"]
    stream = seen["threadStream"]
    assert stream[-1]["data"] == {"status": "run_done", "run_id": run_id}
    assert all(p["id"].startswith(f"{run_id}:") for p in stream)
