"""Access: keys compared in constant time, revocation at once, the permission table
enforced as written, and no secret in any log line, response body or header.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from fastapi.routing import APIRoute

from api.http.app import create_app
from api.http.auth import PERMISSIONS, Permission
from api.http.routes import runs as routes_runs
from domain.access import identity, keyring
from domain.access.identity import key_digest, parse_key
from domain.errors import KeyRevokedError
from domain.record.store import open_store
from persistence.key_probe import PostgresKeyProbe, SQLiteKeyProbe
from service.bootstrap import configure_logging
from service.rate_limit import RateLimiter
from tests.api.http_harness import PUBLIC_PATHS, Server, server_on

ROLES = ("agent", "reviewer", "auditor", "admin")
PUBLIC = PUBLIC_PATHS
HOLDPOINT = Path(sys.executable).with_name("holdpoint")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with server_on(request.param, folder) as running:
        yield running


# -- keys are compared in constant time ----------------------------------------


def functions(module) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(module))
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def test_a_secret_is_checked_only_by_comparing_digests_in_constant_time():
    # The property that matters: the time a check takes does not depend on how much of a
    # guessed secret is right. Holdpoint compares SHA-256 digests (a guess cannot aim at
    # a digest's prefix) with hmac.compare_digest (time independent of where they differ).
    # A timing measurement cannot show this (the noise of a request is ~10^4 times the
    # effect of `==` on 64 characters), so the test reads the code that decides it.
    digest_matches = functions(identity)["digest_matches"]
    (returned,) = [n for n in ast.walk(digest_matches) if isinstance(n, ast.Return)]
    assert ast.unparse(returned.value) == "hmac.compare_digest(key_digest(secret), digest)"
    assert "sha256" in ast.unparse(functions(identity)["key_digest"])
    # And the keyring never compares a secret or a digest any other way
    for name, function in functions(keyring).items():
        for compare in (n for n in ast.walk(function) if isinstance(n, ast.Compare)):
            assert not names_in(compare) & {"secret", "digest"}, f"{name}: {ast.unparse(compare)}"
    # And an unknown key id costs the same digest comparison as a known one
    authenticate = ast.unparse(functions(keyring)["authenticate"])
    assert authenticate.count("digest_matches(secret,") == 2
    assert "digest_matches(secret, _NO_MATCH)" in authenticate


def test_a_wrong_secret_and_an_unknown_key_id_get_the_same_answer(server):
    # Given a real key with its last character changed, and a key id nobody has
    key_id, secret = parse_key(server.keys["auditor"])
    wrong_secret = f"hp_{key_id}_{secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}"
    unknown_id = f"hp_{'0' * 12}_{secret}"
    answers = []
    for key in (wrong_secret, unknown_id):
        with server.http(headers={"x-api-key": key}) as client:
            answers.append(client.get("/audit/refusals"))
    # Then both are the same 401, told apart only by the key id the caller sent
    bodies = [a.json() for a in answers]
    assert [a.status_code for a in answers] == [401, 401]
    assert bodies[0]["detail"].replace(key_id, "0" * 12) == bodies[1]["detail"]
    assert {b["reason"] for b in bodies} == {"unknown_key"}


# -- revoked keys are refused at once ---------------------------------------------


def revoke_with_the_cli(server: Server, key_id: str) -> None:
    """`holdpoint keys revoke` in a process of its own, on the server's store."""
    env = {**os.environ, "HOLDPOINT_STORE": server.store.url}
    done = subprocess.run(
        [str(HOLDPOINT), "keys", "revoke", key_id, "--reason", "leaked"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("header", ["x-api-key", "authorization"])
def test_a_key_revoked_by_another_process_is_refused_on_the_very_next_request(server, header):
    # Given a reviewer's key in use on a kept-alive connection
    info, raw = server.services.keyring.create("leaky", "reviewer")
    value = raw if header == "x-api-key" else f"Bearer {raw}"
    with server.http(headers={header: value}) as client:
        assert client.get("/approvals").status_code == 200
        # When an operator revokes it with the CLI, in another process
        revoke_with_the_cli(server, info.key_id)
        # Then the very next request on the same connection is refused, as revoked
        refused = client.get("/approvals")
        decision = client.post(f"/approvals/{'0' * 32}/decision", json={"decision": "approve"})
    for response in (refused, decision):
        assert response.status_code == 401
        assert response.json()["reason"] == "revoked_key"
        assert response.headers["www-authenticate"] == "Bearer"


def test_on_sqlite_the_event_loop_asks_the_file_whether_a_key_changed(server, tmp_path):
    # Given the server's keyring for the event loop, and a key it has checked once
    checker = server.services.key_checker
    if not server.store.url.startswith("sqlite:"):
        assert checker is None  # PostgreSQL: keys are checked in worker threads
        return
    assert isinstance(checker.probe, SQLiteKeyProbe)
    info, raw = server.services.keyring.create("probed", "reviewer")
    assert checker.authenticate(raw).id == "probed"
    # When another store on the same file (another process) revokes it
    with open_store(server.store.url) as other:
        keyring.Keyring(other).revoke(info.key_id, reason="probe test")
    # Then the loop's keyring refuses it at the next check, as revoked
    with pytest.raises(KeyRevokedError):
        checker.authenticate(raw)


def test_on_postgresql_the_worker_threads_ask_a_connection_of_their_own_whether_a_key_changed(
    server,
):
    # Given the keyring the worker threads check keys with, and a key it has checked once
    checker = server.services.keyring
    if not server.store.url.startswith("postgresql:"):
        assert not isinstance(checker.probe, PostgresKeyProbe)
        return
    assert isinstance(checker.probe, PostgresKeyProbe)
    info, raw = checker.create("probed-on-postgres", "reviewer")
    assert checker.authenticate(raw).id == "probed-on-postgres"
    # When another store on the same database (another process) revokes it
    with open_store(server.store.url) as other:
        keyring.Keyring(other).revoke(info.key_id, reason="probe test")
    # Then the keyring refuses it at the next check, as revoked
    with pytest.raises(KeyRevokedError):
        checker.authenticate(raw)


# -- each role gets what the permission table says --------------------------------


STREAM = "text/event-stream"


def routes(app) -> list[APIRoute]:
    """Every route of the app, through the routers it includes."""

    def walk(items):
        for route in items:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                yield from walk(inner.routes)
            elif isinstance(route, APIRoute):
                yield route

    return list(walk(app.routes))


def permissions_of(route: APIRoute) -> tuple[Permission, ...]:
    """The permissions the route's authentication dependency asks for (any of them)."""
    stack = list(route.dependant.dependencies)
    while stack:
        dependency = stack.pop()
        permissions = getattr(dependency.call, "permissions", None)
        if permissions is not None:
            return tuple(permissions)
        stack += dependency.dependencies
    return ()


def requests_for(route: APIRoute, ids: dict[str, str]) -> list[tuple[str, str, dict | None, set]]:
    """(method, path, body, roles allowed) for a route; run routes twice: a run needs
    the permission to run, a resume the permission to decide (api/http/run_requests.py)."""
    path = route.path.format(**ids)
    (method,) = route.methods
    permissions = permissions_of(route)
    assert permissions, f"{method} {route.path} checks no permission"
    starts_runs = not route.path.endswith("/cancel")
    if route.endpoint.__module__ == routes_runs.__name__ and method == "POST" and starts_runs:
        run: Any = {"assistant_id": "refund", "input": {"refund_amount": 1.0}}
        resume: Any = {"assistant_id": "refund", "command": {"resume": True}}
        if route.path.endswith("/batch"):  # a list of runs
            run, resume = [run], [resume]
        return [
            (method, path, run, set(PERMISSIONS[Permission.RUN])),
            (method, path, resume, set(PERMISSIONS[Permission.DECIDE])),
        ]
    body = {} if method == "POST" else None
    # A run's cancel or delete is open to who runs and who cancels alike; another route
    # open to several permissions asks the domain which one an empty body needs (a
    # state edit: to run), so it is walked with its first.
    either = Permission.CANCEL in permissions
    allowed = {r for p in (permissions if either else permissions[:1]) for r in PERMISSIONS[p]}
    return [(method, path, body, allowed)]


def test_every_endpoint_gives_each_role_what_the_permission_table_says(server):
    # Given a thread paused at an interrupt, its run and checkpoint
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    run = agent.runs.create(thread_id, "refund", input={"refund_amount": 500.0})
    agent.runs.join(thread_id, run["run_id"])
    ids = {
        "thread_id": thread_id,
        "run_id": run["run_id"],
        "checkpoint_id": agent.threads.get_state(thread_id)["checkpoint_id"],
        "interrupt_id": "0" * 32,
        "assistant_id": "refund",
        "version": "1",
        "namespace": "refund",
        "cron_id": "0" * 32,
        "graph_id": "refund",
        "hold_id": "hold-1",
    }
    app = create_app(server.services)
    found = [r for r in routes(app) if r.path not in PUBLIC]
    with server.http() as anonymous:
        documented = anonymous.get("/openapi.json").json()["paths"]
    # And every documented operation is among the routes walked
    walked = {(next(iter(r.methods)).lower(), r.path) for r in found}
    listed = {(m, p) for p, ops in documented.items() for m in ops if p not in PUBLIC}
    assert walked == listed
    failures = []
    clients = {role: server.http(role) for role in ROLES}  # one each: TLS set-up is slow
    # When each role calls each endpoint
    for route in found:
        for method, path, body, allowed in requests_for(route, ids):
            for role in ROLES:
                with clients[role].stream(method, path, json=body) as response:
                    if not response.headers.get("content-type", "").startswith(STREAM):
                        response.read()  # a thread's stream never ends: its status tells
                refused = response.status_code == 403
                # Then it is refused (403, wrong role) exactly when its role lacks the permission
                if refused != (role not in allowed) or response.status_code in (401, 500):
                    failures.append(f"{role} {method} {path}: {response.status_code}")
                # And a refusal shows nothing but the problem
                if refused:
                    problem = response.json()
                    assert set(problem) <= {
                        "type",
                        "title",
                        "status",
                        "detail",
                        "instance",
                        "reason",
                    }
                    assert problem["reason"] == "wrong_role"
    for client in clients.values():
        client.close()
    assert failures == []


# -- secrets never appear in logs or answers ---------------------------------------


class Records(logging.Handler):
    """Every standard-library log record, formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def captured_logs():
    """The server's structlog output, configured as in production (JSON), and the
    standard library's records (uvicorn's), for the length of a test."""
    buffer = io.StringIO()
    records = Records()
    root = logging.getLogger()
    saved = structlog.get_config()
    configure_logging(json=True, file=buffer, cache=False)
    root.addHandler(records)
    try:
        yield lambda: buffer.getvalue() + "\n".join(records.lines)
    finally:
        root.removeHandler(records)
        structlog.configure(**saved)


def secrets_of(raw_keys: list[str]) -> list[str]:
    """Each key, its secret part and the digest the store keeps of it."""
    found = []
    for raw in raw_keys:
        _, secret = parse_key(raw)
        found += [raw, secret, key_digest(secret)]
    return found


def test_no_key_or_secret_appears_in_a_log_line_an_answer_or_a_refusal(server, captured_logs):
    seen: list[str] = []

    def keep(response: httpx.Response) -> None:
        response.read()
        seen.append(f"{response.status_code} {dict(response.headers)} {response.text}")

    def client(key: str | None = None, bearer: bool = False) -> httpx.Client:
        headers = {}
        if key is not None:
            headers = {"authorization": f"Bearer {key}"} if bearer else {"x-api-key": key}
        return server.http(headers=headers, event_hooks={"response": [keep]})

    # Given keys made for this session, one of them soon revoked
    _, reviewer = server.services.keyring.create("session-reviewer", "reviewer")
    revoked_info, revoked = server.services.keyring.create("session-revoked", "agent")
    agent = server.keys["agent"]
    key_id, secret = parse_key(agent)
    # When a scripted session runs: work done, then every kind of failure
    with client(agent) as a, client(reviewer, bearer=True) as r:
        thread_id = a.post("/threads", json={}).json()["thread_id"]
        paused = a.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund", "input": {"refund_amount": 500.0}},
        ).json()
        interrupt_id = paused["__interrupt__"][0]["id"]
        r.post(f"/approvals/{interrupt_id}/decision", json={"decision": "reject"})
        r.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})  # 409
        a.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})  # 403
        a.get("/threads/no-such-thread")  # 404
        a.post("/threads", json={"thread_id": "a/b"})  # 422
        a.post("/threads", content=b"{", headers={"content-type": "application/json"})  # 400
        a.post("/threads", json={"metadata": {"x": "y" * 2_000_000}})  # 413
        a.get(f"/threads?api_key={agent}")  # a key in a query string: 405, never logged
    server.services.keyring.revoke(revoked_info.key_id)
    for key in (
        f"hp_{key_id}_{secret[:-1]}x",  # the right id, a wrong secret
        f"hp_{'f' * 12}_{secret}",  # the right secret, an unknown id
        f"hp_{key_id}_{secret}!",  # malformed around a real key
        secret,  # the secret alone
        revoked,
        None,
    ):
        with client(key) as stranger, client(key, bearer=True) as bearer:
            stranger.get("/approvals")
            bearer.post("/runs/wait", json={"assistant_id": "refund", "input": {}})
    tight = server.services.settings.updated(run_burst=1, run_rate_limit=0.001)
    server.services.rate_limiter = RateLimiter.from_settings(tight)
    try:
        with client(agent) as a:
            for _ in range(3):  # the second and third: 429
                a.post("/runs/wait", json={"assistant_id": "refund", "input": {}})
    finally:
        server.services.rate_limiter = RateLimiter.from_settings(server.services.settings)
    with client(server.keys["auditor"]) as auditor:
        auditor.get("/audit/refusals", params={"limit": 1000})
        auditor.get(f"/threads/{thread_id}/events")
        auditor.get("/metrics")
    statuses = {int(line.split(" ", 1)[0]) for line in seen}
    assert {200, 400, 401, 403, 404, 405, 409, 413, 422, 429} <= statuses
    # Then no log line, status line, header or body holds a key, a secret or a digest
    logs = captured_logs()
    events = [json.loads(line).get("event") for line in logs.splitlines() if line[:1] == "{"]
    assert "request" in events
    everything = logs + "\n".join(seen)
    secrets = secrets_of([agent, reviewer, revoked, *server.keys.values()])
    leaked = [s[:12] + "…" for s in secrets if s in everything]
    assert leaked == []


def test_a_logged_traceback_shows_no_local_variable(captured_logs):
    # Given a frame whose local variables hold a key, as a request's headers do
    raw = "hp_0123456789ab_" + "S" * 43

    def handle(headers: dict[str, str]) -> None:
        key = headers["x-api-key"]
        raise RuntimeError("something broke after " + key[:3])

    # When the error is logged with its traceback, as the app logs a 500
    try:
        handle({"x-api-key": raw})
    except RuntimeError:
        structlog.get_logger().exception("unexpected error")
    # Then the traceback is there, and the key is not
    logs = captured_logs()
    assert "RuntimeError" in logs
    assert "handle" in logs
    assert raw not in logs
    assert "S" * 43 not in logs
