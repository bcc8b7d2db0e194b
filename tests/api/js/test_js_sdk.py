"""LangGraph's JS SDK, from Node, drives Holdpoint with the calls Agent Chat UI's
`useStream` and Agent Inbox make: a thread, a run streamed to its interrupt, the state
with it, a search, a dropped stream joined again after its last event, the reviewer's
resume, and the state at the end."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server
from tests.api.js.js_sdk import require_js_sdk, run_script


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_js_sdk()
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


def test_the_js_sdk_runs_the_refund_story(server):
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
