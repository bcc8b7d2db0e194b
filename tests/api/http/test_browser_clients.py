"""What browser clients of LangGraph's server (Agent Chat UI, Agent Inbox, useStream)
need before their first call: CORS for the allowed origins only, `/info` and `/ok` as
LangGraph's server answers them, and streams a proxy does not hold back and a dropped
connection resumes."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server

APP = "http://app.example:3000"
PREFLIGHT = {
    "Origin": APP,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "x-api-key,content-type",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{folder / 'holdpoint.db'}"
    with running_server(url, cors_allow_origins=[APP]) as running:
        yield running


@pytest.fixture(scope="module")
def closed_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


# -- CORS ---------------------------------------------------------------------------


def test_an_allowed_origin_is_answered_the_preflight_and_may_read_the_answer(server):
    with server.http() as anonymous:
        preflight = anonymous.options("/threads/search", headers=PREFLIGHT)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == APP
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "x-api-key" in preflight.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in preflight.headers
    # The call itself: its answer names the origin, and the headers a page may read
    with server.http("agent", headers={"Origin": APP}) as agent:
        answer = agent.post("/threads", json={})
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == APP
    exposed = answer.headers["access-control-expose-headers"].lower()
    assert "content-location" in exposed
    assert "x-holdpoint-position" in exposed


def test_another_origin_is_refused_the_preflight_and_its_answers_name_no_origin(server):
    other = {**PREFLIGHT, "Origin": "http://evil.example"}
    with server.http() as anonymous:
        preflight = anonymous.options("/threads/search", headers=other)
    assert preflight.status_code == 400
    assert "access-control-allow-origin" not in preflight.headers
    with server.http("agent", headers={"Origin": "http://evil.example"}) as agent:
        answer = agent.post("/threads", json={})
    assert "access-control-allow-origin" not in answer.headers


def test_an_error_answer_to_an_allowed_origin_can_be_read_by_the_page(server):
    with server.http(headers={"Origin": APP}) as anonymous:
        refused = anonymous.post("/threads", json={})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == APP


def test_by_default_no_origin_is_allowed(closed_server):
    with closed_server.http() as anonymous:
        preflight = anonymous.options("/threads/search", headers=PREFLIGHT)
    assert preflight.status_code == 405
    assert not [name for name in preflight.headers if name.startswith("access-control-")]
    with closed_server.http("agent", headers={"Origin": APP}) as agent:
        answer = agent.post("/threads", json={})
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


# -- /info and /ok --------------------------------------------------------------------


def test_info_describes_the_server_as_langgraphs_does_without_a_key(server):
    with server.http() as anonymous:
        info = anonymous.get("/info")
    assert info.status_code == 200
    body = info.json()
    assert set(body) == {"version", "langgraph_py_version", "flags", "host"}
    assert body["flags"]["assistants"] is True
    assert body["flags"]["crons"] is True
    assert body["host"]["kind"] == "holdpoint"


def test_ok_answers_as_langgraphs_server_and_checks_the_store_when_asked(server):
    with server.http() as anonymous:
        assert anonymous.get("/ok").json() == {"ok": True, "services": {"database": "skipped"}}
        checked = anonymous.get("/ok", params={"check_db": 1})
        assert checked.json() == {"ok": True, "services": {"database": "healthy"}}
        assert anonymous.get("/ok", params={"check_db": 2}).status_code == 422


# -- streams ------------------------------------------------------------------------


def stream_events(response) -> list[dict[str, str]]:
    """The server-sent events of a whole response, each as its fields."""
    events = []
    for block in response.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            events.append(fields)
    return events


def test_a_stream_is_not_buffered_and_numbers_its_events(server):
    with server.http("agent") as agent:
        thread_id = agent.post("/threads", json={}).json()["thread_id"]
        body = {
            "assistant_id": "refund_approval",
            "input": {"refund_amount": 99.0, "approved": False},
            "stream_mode": ["values", "updates"],
        }
        streamed = agent.post(f"/threads/{thread_id}/runs/stream", json=body)
    assert streamed.headers["x-accel-buffering"] == "no"
    events = stream_events(streamed)
    assert [e["event"] for e in events] == ["metadata", "values", "updates", "values"]
    assert "id" not in events[0]  # the metadata is sent again on every connection
    assert [e["id"] for e in events[1:]] == ["1", "2", "3"]


def test_a_dropped_stream_resumes_after_its_last_event_id(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    parts = list(
        agent.runs.stream(
            thread_id,
            "refund_approval",
            input={"refund_amount": 20.0, "approved": False},
            stream_mode=["values", "updates"],
        )
    )
    run_id = parts[0].data["run_id"]
    # Given a client that received the events up to the first values
    first = parts[1]
    assert first.id == "1"
    # When it joins again with the SDK's last_event_id
    resumed = list(agent.runs.join_stream(thread_id, run_id, last_event_id=first.id))
    # Then it gets the metadata and every event after it, with the same ids and data
    assert resumed[0].event == "metadata"
    assert [(p.event, p.id, p.data) for p in resumed[1:]] == [
        (p.event, p.id, p.data) for p in parts[2:]
    ]
    # And a join may ask for some of the run's modes, keeping the ids
    updates = list(agent.runs.join_stream(thread_id, run_id, stream_mode="updates"))
    assert [(p.id, p.data) for p in updates[1:]] == [
        (p.id, p.data) for p in parts[1:] if p.event == "updates"
    ]


def test_a_join_is_refused_a_bad_last_event_id_and_a_mode_not_streamed(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    run = agent.runs.create(thread_id, "refund", input={"refund_amount": 5.0})
    agent.runs.join(thread_id, run["run_id"])
    path = f"/threads/{thread_id}/runs/{run['run_id']}/stream"
    with server.http("agent") as http:
        bad_id = http.get(path, headers={"Last-Event-ID": "1-0"})
        assert bad_id.status_code == 422
        assert "Last-Event-ID" in bad_id.json()["detail"]
        not_streamed = http.get(path, params={"stream_mode": "debug"})
        assert not_streamed.status_code == 422
        assert "'debug'" in not_streamed.json()["detail"]
        # A run not streamed when it ran: its output, numbered as its last chunk
        events = stream_events(http.get(path))
    assert [e["event"] for e in events] == ["metadata", "values"]
    assert int(events[1]["id"]) >= 1
    with server.http("agent") as http:
        after_it = stream_events(http.get(path, headers={"Last-Event-ID": events[1]["id"]}))
    assert [e["event"] for e in after_it] == ["metadata"]
