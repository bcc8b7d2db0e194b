"""Errors are RFC 9457 problem details with a precise detail, and record nothing."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.api.http_harness import server_on

LIMIT = 4096


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with server_on(request.param, folder, max_body_bytes=LIMIT) as running:
        yield running


@pytest.fixture
def agent(server):
    with server.http("agent") as client:
        yield client


def assert_problem(response, status, *fragments):
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == status
    assert problem["type"].startswith("https://holdpoint.dev/problems/")
    assert problem["instance"] == response.request.url.path
    for fragment in fragments:
        assert fragment in problem["detail"], problem["detail"]
    return problem


def paused_thread(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    sdk.runs.wait(thread_id, "refund", input={"refund_amount": 400.0})
    return thread_id


def test_bad_json_is_a_400_naming_the_problem(server, agent):
    head = server.head()
    response = agent.post(
        "/threads", content=b'{"thread_id": ', headers={"content-type": "application/json"}
    )
    assert_problem(response, 400, "not valid JSON")
    assert server.head() == head


def test_a_wrong_type_is_a_422_naming_the_field(server, agent):
    thread_id = agent.post("/threads", json={}).json()["thread_id"]
    response = agent.post(
        f"/threads/{thread_id}/runs/wait", json={"assistant_id": "refund", "input": [1, 2]}
    )
    problem = assert_problem(response, 422, "body.input")
    assert problem["errors"][0]["field"] == "body.input"
    with server.http("reviewer") as reviewer:
        missing = reviewer.post(f"/approvals/{'a' * 32}/decision", json={"reason": "x"})
        wrong = reviewer.post(f"/approvals/{'a' * 32}/decision", json={"decision": "maybe"})
    assert_problem(missing, 422, "body.decision", "Field required")
    assert_problem(wrong, 422, "body.decision", "'approve'")


def test_an_unknown_graph_is_a_422_listing_the_served_ones(server, agent):
    thread_id = agent.post("/threads", json={}).json()["thread_id"]
    head = server.head()
    response = agent.post(f"/threads/{thread_id}/runs/wait", json={"assistant_id": "nope"})
    assert_problem(response, 422, "Invalid assistant: 'nope'", "refund")
    assert server.head() == head
    with pytest.raises(UnprocessableEntityError, match="nope"):
        server.sdk("agent").runs.create(thread_id, "nope", input={})


def test_an_unknown_thread_is_a_404(server, agent):
    head = server.head()
    assert_problem(agent.get("/threads/no-such"), 404, "Thread with ID no-such not found")
    assert_problem(agent.get("/threads/no-such/state"), 404, "no-such")
    response = agent.post("/threads/no-such/runs/wait", json={"assistant_id": "refund"})
    assert_problem(response, 404, "'no-such' not found", "if_not_exists")
    assert server.head() == head
    with pytest.raises(NotFoundError, match="no-such"):
        server.sdk("agent").threads.get("no-such")


def test_a_resume_of_a_thread_that_is_not_paused_is_a_409_and_records_nothing(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    sdk.runs.wait(thread_id, "refund", input={"refund_amount": 10.0})
    events = server.event_count(thread_id)
    reviewer = server.sdk("reviewer")
    with pytest.raises(ConflictError, match="is not paused at an interrupt"):
        reviewer.runs.create(thread_id, "refund", command={"resume": True})
    # runs.wait raises httpx's own error, with the problem's body as a note
    with pytest.raises(httpx.HTTPStatusError) as raised:
        reviewer.runs.wait(thread_id, "refund", command={"resume": True})
    assert raised.value.response.status_code == 409
    assert server.event_count(thread_id) == events


def test_new_input_on_a_paused_thread_is_a_409_and_records_nothing(server, agent):
    thread_id = paused_thread(server)
    events = server.event_count(thread_id)
    response = agent.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": "refund", "input": {"refund_amount": 1.0}},
    )
    assert_problem(response, 409, "is paused at interrupt")
    assert server.event_count(thread_id) == events


def test_a_body_over_the_limit_is_a_413(server, agent):
    head = server.head()
    big = {"thread_id": "x", "metadata": {"blob": "x" * LIMIT}}
    assert_problem(agent.post("/threads", json=big), 413, str(LIMIT))

    def chunks():
        yield b'{"metadata": {"blob": "'
        yield b"x" * LIMIT
        yield b'"}}'

    chunked = agent.post("/threads", content=chunks(), headers={"content-type": "application/json"})
    assert_problem(chunked, 413, "larger than")
    assert server.head() == head


def test_a_small_chunked_body_passes(agent):
    def chunks():
        yield b'{"metadata": '
        yield b'{"case": "chunked"}}'

    response = agent.post(
        "/threads", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json()["metadata"] == {"case": "chunked"}


def test_an_unknown_route_and_a_thread_that_exists_already(server, agent):
    assert_problem(agent.get("/nowhere"), 404, "No endpoint GET /nowhere")
    thread_id = agent.post("/threads", json={}).json()["thread_id"]
    assert_problem(agent.post("/threads", json={"thread_id": thread_id}), 409, "already exists")
    again = agent.post("/threads", json={"thread_id": thread_id, "if_exists": "do_nothing"})
    assert again.json()["thread_id"] == thread_id


def test_a_bad_idempotency_key_and_a_bad_stream_mode_are_422(server, agent):
    thread_id = paused_thread(server)
    interrupt_id = server.store.thread(thread_id).interrupts.popitem()[0]
    with server.http("reviewer") as reviewer:
        response = reviewer.post(
            f"/approvals/{interrupt_id}/decision",
            json={"decision": "approve"},
            headers={"Idempotency-Key": "has space"},
        )
    assert_problem(response, 422, "Idempotency-Key")
    response = agent.post(
        "/runs/wait",
        json={"assistant_id": "refund", "input": {"refund_amount": 1}, "stream_mode": "debug"},
    )
    assert_problem(response, 422, "body.stream_mode", "'debug'")
