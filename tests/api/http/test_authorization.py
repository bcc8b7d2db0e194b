"""Every endpoint against every role, no key, a bad key and a revoked key.

The expected roles are written out here, endpoint by endpoint, as the
specification: agents start and run threads, reviewers decide and stop,
auditors read the record, admins do everything, everyone with a key reads
threads, their past states included (time travel). Each refusal is recorded
and readable by auditors.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.api.http_harness import server_on

ROLES = ("agent", "reviewer", "auditor", "admin")
ALL = set(ROLES)
RUN = {"agent", "admin"}
DECIDE = {"reviewer", "admin"}
QUEUE = {"reviewer", "auditor", "admin"}
AUDIT = {"auditor", "admin"}
UNKNOWN_INTERRUPT = "0" * 32
REFUND = "7fdea710-6c69-5a3b-ade4-f5d108e5826e"


def endpoints(t: dict[str, str]) -> list[tuple[str, str, dict | None, set[str]]]:
    """(method, path, JSON body, roles allowed) for every endpoint that needs a key."""
    thread, scratch, run = t["thread"], t["scratch"], t["run"]
    small = {"assistant_id": "refund", "input": {"refund_amount": 1.0}}
    return [
        ("POST", "/assistants/search", {}, ALL),
        ("GET", f"/assistants/{REFUND}", None, ALL),
        ("POST", "/threads", {}, RUN),
        ("GET", f"/threads/{thread}", None, ALL),
        ("POST", "/threads/search", {}, ALL),
        ("GET", f"/threads/{thread}/state", None, ALL),
        ("GET", f"/threads/{thread}/state/{t['checkpoint']}", None, ALL),
        ("POST", f"/threads/{thread}/state/checkpoint",
         {"checkpoint": {"checkpoint_id": t["checkpoint"]}}, ALL),
        ("POST", f"/threads/{scratch}/state", {"values": {"refund_amount": 2.0}}, RUN),
        ("POST", f"/threads/{thread}/history", {"limit": 2}, ALL),
        ("GET", f"/threads/{thread}/history", None, ALL),
        ("GET", f"/threads/{thread}/versions/2", None, ALL),
        ("GET", f"/threads/{thread}/as-of", {"at": t["now"]}, ALL),
        ("GET", f"/threads/{thread}/diff", {"from": "1", "to": "2"}, ALL),
        ("GET", f"/threads/{thread}/lineage", None, ALL),
        ("POST", f"/threads/{scratch}/runs", small, RUN),
        ("POST", f"/threads/{scratch}/runs/wait", small, RUN),
        ("POST", f"/threads/{scratch}/runs/stream", small, RUN),
        ("POST", f"/threads/{scratch}/runs/wait",
         {"assistant_id": "refund", "command": {"resume": True}}, DECIDE),
        ("POST", "/runs/wait", small, RUN),
        ("POST", "/runs", small, RUN),
        ("POST", "/runs/stream", small, RUN),
        ("GET", f"/threads/{thread}/runs", None, ALL),
        ("GET", f"/threads/{thread}/runs/{run}", None, ALL),
        ("GET", f"/threads/{thread}/runs/{run}/join", None, ALL),
        ("GET", f"/threads/{thread}/runs/{run}/stream", None, ALL),
        ("GET", "/approvals", None, QUEUE),
        ("POST", f"/approvals/{UNKNOWN_INTERRUPT}/decision", {"decision": "approve"}, DECIDE),
        ("POST", "/threads/no-such-thread/cancel", {"reason": "test"}, DECIDE),
        ("GET", f"/threads/{thread}/events", None, AUDIT),
        ("GET", f"/threads/{thread}/audit", None, AUDIT),
        ("GET", "/audit/refusals", None, AUDIT),
        ("GET", "/audit/verify", {"thread_id": thread}, AUDIT),
        ("GET", "/reports/oversight", None, AUDIT),
        ("GET", "/metrics", None, AUDIT),
    ]  # fmt: skip


OPEN = ["/healthz", "/readyz", "/docs", "/openapi.json"]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request, tmp_path_factory):
    # Every endpoint is called three times without a valid key, from one address: more
    # than the default burst of such requests before the address gets 429 (service/rate_limit.py)
    folder = tmp_path_factory.mktemp("store")
    with server_on(request.param, folder, auth_failure_burst=1000) as server:
        agent = server.sdk("agent")
        thread = agent.threads.create()["thread_id"]
        run = agent.runs.create(thread, "refund", input={"refund_amount": 500.0})
        agent.runs.join(thread, run["run_id"])
        checkpoint = agent.threads.get_state(thread)["checkpoint"]["checkpoint_id"]
        scratch = agent.threads.create(graph_id="refund")["thread_id"]
        names = {
            "thread": thread,
            "scratch": scratch,
            "run": run["run_id"],
            "checkpoint": checkpoint,
            "now": datetime.now(UTC).isoformat(),
        }
        yield server, names
        for (url, _), client in list(_clients.items()):
            if url == server.url:
                client.close()


_clients: dict = {}


def call(server, who, method, path, body):
    """One request as `who` (a principal's name, a raw key, or None for no key)."""
    key = (server.url, who)
    if key not in _clients:  # a client per caller: making one costs more than a request
        headers = {} if who is None else {"x-api-key": server.keys.get(who, who)}
        _clients[key] = server.http(headers=headers)
    client = _clients[key]
    if method == "GET":
        return client.get(path, params=body)
    return client.post(path, json=body)


def refusal_count(server, reasons=("wrong_role", "no_key", "unknown_key", "revoked_key")):
    """Refusals on record for a missing or bad key, or a role without the permission."""
    with server.http("auditor") as auditor:
        refusals = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"]
    return sum(1 for refusal in refusals if refusal["reason"] in reasons)


def test_every_endpoint_against_every_role(world):
    server, names = world
    refused = 0
    before = refusal_count(server)
    failures = []
    for method, path, body, allowed in endpoints(names):
        for role in ROLES:
            response = call(server, role, method, path, body)
            expected_refusal = role not in allowed
            if expected_refusal and response.status_code != 403:
                failures.append(f"{role} {method} {path}: {response.status_code}, want 403")
            if not expected_refusal and response.status_code in (401, 403):
                failures.append(f"{role} {method} {path}: {response.status_code} {response.text}")
            if expected_refusal:
                refused += 1
                assert response.json()["reason"] == "wrong_role"
                assert role in response.json()["detail"]
    assert failures == []
    assert refusal_count(server) - before == refused


@pytest.mark.parametrize("key", [None, "hp_000000000000_" + "x" * 43, "not-a-key"])
def test_every_endpoint_refuses_a_missing_or_unknown_key(world, key):
    server, names = world
    before = refusal_count(server)
    for method, path, body, _ in endpoints(names):
        response = call(server, key, method, path, body)
        assert response.status_code == 401, f"{method} {path}"
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["reason"] == ("no_key" if key is None else "unknown_key")
    assert refusal_count(server) - before == len(endpoints(names))


def test_a_revoked_key_is_refused_and_a_bearer_token_works(world):
    server, names = world
    info, raw = server.services.keyring.create("temp", "auditor")
    with server.http(headers={"Authorization": f"Bearer {raw}"}) as client:
        assert client.get(f"/threads/{names['thread']}/audit").status_code == 200
        server.services.keyring.revoke(info.key_id, reason="test")
        refused = client.get(f"/threads/{names['thread']}/audit")
    assert refused.status_code == 401
    assert refused.json()["reason"] == "revoked_key"
    assert "revoked" in refused.json()["detail"]


def test_health_readiness_and_docs_need_no_key(world):
    server, _ = world
    with server.http() as client:
        for path in OPEN:
            assert client.get(path).status_code == 200, path


def test_refusals_name_who_what_and_why(world):
    server, names = world
    call(server, "agent", "GET", f"/threads/{names['thread']}/audit", None)
    with server.http("auditor") as auditor:
        last = auditor.get("/audit/refusals", params={"limit": 1000}).json()["data"][-1]
    assert last["principal_id"] == "agent"
    assert last["role"] == "agent"
    assert last["reason"] == "wrong_role"
    assert last["action"] == f"GET /threads/{names['thread']}/audit"
    assert last["target"] == names["thread"]


def refusals_after(server, position):
    """The refusals recorded after log position `position`: (who, reason, action, target)."""
    with server.http("auditor") as auditor:
        data = auditor.get("/audit/refusals", params={"after": position, "limit": 1000}).json()
    return [(r["principal_id"], r["reason"], r["action"], r["target"]) for r in data["data"]]


@pytest.mark.parametrize(
    ("who", "body"),
    [
        ("auditor", {"assistant_id": "refund", "input": {"refund_amount": 1.0}}),
        ("auditor", {"assistant_id": "refund", "command": {"resume": True}}),
        ("reviewer", {"assistant_id": "refund", "input": {"refund_amount": 1.0}}),
        ("reviewer", {"assistant_id": "no-such-graph", "input": {"refund_amount": 1.0}}),
        ("agent", {"assistant_id": "refund", "command": {"resume": True}}),
        ("agent", {"assistant_id": "no-such-graph", "command": {"resume": True}}),
    ],
    ids=["auditor-input", "auditor-resume", "reviewer-input", "reviewer-unknown-graph",
         "agent-resume", "agent-resume-unknown-graph"],
)  # fmt: skip
def test_a_run_by_a_role_that_may_not_send_it_is_403_on_an_unknown_thread_and_recorded(
    world, who, body
):
    # Given a thread id nobody created (and, in some cases, a graph nobody serves)
    server, _ = world
    path = "/threads/never-created/runs/wait"
    position = server.head()

    # When a role that may not send this run sends it there
    response = call(server, who, "POST", path, body)

    # Then the role is refused first (403, not 404 or 422), and the refusal is on record
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["reason"] == "wrong_role"
    assert f"has role {who!r}" in problem["detail"]
    assert refusals_after(server, position) == [
        (who, "wrong_role", f"POST {path}", "never-created")
    ]
    assert server.store.thread("never-created") is None


def test_a_right_role_still_gets_404_for_an_unknown_thread_and_422_for_an_unknown_graph(world):
    # Given an agent, a thread id nobody created and a graph nobody serves
    server, _ = world
    run = {"assistant_id": "refund", "input": {"refund_amount": 1.0}}

    # When the agent starts runs there
    unknown_thread = call(server, "agent", "POST", "/threads/never-created/runs/wait", run)
    unknown_graph = call(
        server, "agent", "POST", "/runs/wait", {**run, "assistant_id": "no-such-graph"}
    )

    # Then it gets what it got before the role was checked first
    assert unknown_thread.status_code == 404
    assert unknown_thread.json()["type"].endswith("/thread-not-found")
    assert unknown_graph.status_code == 422
    assert unknown_graph.json()["type"].endswith("/unknown-assistant")
