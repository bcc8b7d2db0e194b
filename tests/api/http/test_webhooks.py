"""Webhooks and notifications, delivered to a real HTTP receiver this test runs on the
loopback interface: configured targets are told when an interrupt is raised, assigned,
nears its deadline, breaches it or is decided, signed with HMAC-SHA256 over the body
(or as a Slack message); a run's webhook is called when it ends; a 500 is retried with
backoff and every attempt is on the delivery's row for auditors; hosts off the
allow-list, and loopback or private addresses unless allowed, are refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict

import pytest

from domain.types import interrupt
from service.notifications.hosts import HostRefusedError, check_url
from service.notifications.settings import Notifications, notifications
from tests.api.http_harness import running_server
from tests.graphs import linear_graph

SECRET = "ops-secret-0123456789abcdef"
RUN_SECRET = "run-secret-0123456789abcdef"
REFUND = {"refund_amount": 250.0, "approved": False}


class Receiver:
    """An HTTP server that keeps what it is sent, answering the statuses it is told to
    for a path (or for a path and a thread): first to last, the last one then on; 200
    when told nothing."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.statuses: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                thread_id = json.loads(body).get("thread_id")
                with receiver.lock:
                    receiver.received.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    queued = (
                        receiver.statuses.get(f"{self.path} {thread_id}")
                        or receiver.statuses.get(self.path)
                        or [200]
                    )
                    status = queued.pop(0) if len(queued) > 1 else queued[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.received if r["path"] == path]


class Due(TypedDict):
    answer: Any


def ask_by_deadline(state: Due) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Approve the payout?"}, deadline=3600)}


def wait_until(condition, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.server.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory, receiver):
    os.environ["TEST_OPS_SECRET"] = SECRET
    os.environ["TEST_RUN_SECRET"] = RUN_SECRET
    receiver.statuses["/down"] = [503]
    table = {
        "allow_hosts": ["127.0.0.1", "refused.example"],
        "allow_private_networks": True,  # the receiver is on the loopback interface
        "run_webhook_secret_env": "TEST_RUN_SECRET",
        "first_retry_seconds": 0.05,
        "poll_seconds": 0.05,
        "max_attempts": 3,
        "near_deadline_seconds": 7200,
        "targets": [
            {"name": "ops", "url": f"{receiver.url}/ops", "secret_env": "TEST_OPS_SECRET"},
            {
                "name": "chat",
                "url": f"{receiver.url}/slack",
                "kind": "slack",
                "events": ["interrupt.raised"],
            },
            {
                "name": "flaky",
                "url": f"{receiver.url}/flaky",
                "secret_env": "TEST_OPS_SECRET",
                "events": ["interrupt.raised"],
            },
            {
                "name": "down",
                "url": f"{receiver.url}/down",
                "secret_env": "TEST_OPS_SECRET",
                "events": ["interrupt.raised"],
            },
        ],
    }
    folder = tmp_path_factory.mktemp("store")

    def graphs(store):
        return {"due": linear_graph(store, Due, ask_by_deadline, name="due")}

    with running_server(
        f"sqlite:///{folder / 'holdpoint.db'}", extra=graphs, notifications=table
    ) as running:
        yield running


def notices(receiver: Receiver, path: str, thread_id: str, event: str) -> list[dict[str, Any]]:
    found = []
    for request in receiver.at(path):
        body = json.loads(request["body"])
        text = json.dumps(body)
        if thread_id in text and (request["headers"].get("X-Holdpoint-Event") == event):
            found.append({**request, "json": body})
    return found


def paused(server, graph: str = "refund_approval", given: Any = REFUND) -> str:
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    agent.runs.wait(thread_id, graph, input=given)
    return thread_id


def test_a_raised_interrupt_is_sent_signed_to_a_webhook_and_as_a_slack_message(server, receiver):
    thread_id = paused(server)
    [sent] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.raised"), "the ops webhook"
    )
    # The signature is the HMAC-SHA256 of the exact body under the target's secret
    expected = hmac.new(SECRET.encode(), sent["body"], hashlib.sha256).hexdigest()
    assert sent["headers"]["X-Holdpoint-Signature"] == f"sha256={expected}"
    body = sent["json"]
    assert body["event"] == "interrupt.raised"
    assert body["thread_id"] == thread_id
    assert body["graph_id"] == "refund_approval"
    assert body["question"]
    assert body["link"].endswith(f"/ui/approvals/{body['interrupt_id']}")
    assert body["delivery_id"] == sent["headers"]["X-Holdpoint-Delivery"]
    # And the Slack target gets an incoming webhook's message naming the thread
    [chat] = wait_until(
        lambda: notices(receiver, "/slack", thread_id, "interrupt.raised"), "the slack message"
    )
    assert thread_id in chat["json"]["text"]
    assert chat["json"]["blocks"][0]["type"] == "section"
    assert "X-Holdpoint-Signature" not in chat["headers"]  # no secret_env: unsigned


def test_a_decision_and_an_assignment_are_sent_with_who_made_them(server, receiver):
    thread_id = paused(server)
    [raised] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.raised"), "the raised notice"
    )
    interrupt_id = raised["json"]["interrupt_id"]
    with server.http("reviewer") as reviewer:
        assigned = reviewer.post(
            f"/approvals/{interrupt_id}/assign", json={"reviewer_id": "reviewer"}
        )
        assert assigned.status_code == 200, assigned.text
        decided = reviewer.post(
            f"/approvals/{interrupt_id}/decision", json={"decision": "approve", "reason": "ok"}
        )
        assert decided.status_code == 200, decided.text
    [assignment] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.assigned"), "the assignment"
    )
    assert assignment["json"]["assigned_to"] == "reviewer"
    [decision] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.decided"), "the decision"
    )
    assert decision["json"]["decision"] == "approve"
    assert decision["json"]["actor"]["id"] == "reviewer"
    assert decision["json"]["reason"] == "ok"


def test_an_interrupt_near_its_deadline_and_past_it_is_sent(server, receiver):
    thread_id = paused(server, "due", {"answer": None})
    [near] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.near_deadline"), "near deadline"
    )
    assert near["json"]["due_by"]
    # When its deadline passes (the deadline worker's expiry, recorded)
    interrupt_id = near["json"]["interrupt_id"]
    server.store.expire(thread_id, interrupt_id, datetime.now(UTC) + timedelta(hours=2))
    [breached] = wait_until(
        lambda: notices(receiver, "/ops", thread_id, "interrupt.breached"), "the breach"
    )
    assert breached["json"]["interrupt_id"] == interrupt_id


def test_a_delivery_answered_500_is_retried_with_backoff_and_each_attempt_kept(server, receiver):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    receiver.statuses[f"/flaky {thread_id}"] = [500, 500, 200]
    agent.runs.wait(thread_id, "refund_approval", input=REFUND)
    wait_until(lambda: notices(receiver, "/flaky", thread_id, "interrupt.raised"), "a try")
    flaky = wait_until(
        lambda: [
            d
            for d in server.services.deliveries.listed(target="flaky")
            if d.body and d.body["thread_id"] == thread_id and d.status == "delivered"
        ],
        "the flaky target's delivery",
    )[0]
    # The receiver answered 500, 500 then 200: three attempts, each on the row
    assert flaky.attempts == 3
    assert [a["status"] for a in flaky.attempt_log] == [500, 500, 200]
    assert len(notices(receiver, "/flaky", thread_id, "interrupt.raised")) == 3
    # A target that keeps failing is failed after max_attempts, not retried for ever
    down = wait_until(
        lambda: [
            d
            for d in server.services.deliveries.listed(target="down")
            if d.body and d.body["thread_id"] == thread_id and d.status == "failed"
        ],
        "the down target's delivery to fail",
    )[0]
    assert [a["status"] for a in down.attempt_log] == [503, 503, 503]
    # And auditors read them, a reviewer may not
    with server.http("auditor") as auditor:
        listed = auditor.get("/audit/deliveries", params={"target": "flaky"}).json()
    ours = [d for d in listed["deliveries"] if d["delivery_id"] == flaky.delivery_id]
    assert ours[0]["status"] == "delivered"
    assert "body" not in ours[0]
    with server.http("reviewer") as reviewer:
        assert reviewer.get("/audit/deliveries").status_code == 403


def test_a_runs_webhook_is_called_signed_once_the_run_has_ended(server, receiver):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    run = agent.runs.create(
        thread_id, "refund", input={"refund_amount": 5.0}, webhook=f"{receiver.url}/runs"
    )
    agent.runs.join(thread_id, run["run_id"])
    [called] = wait_until(
        lambda: [r for r in receiver.at("/runs") if run["run_id"].encode() in r["body"]],
        "the run's webhook",
    )
    body = json.loads(called["body"])
    assert body["run_id"] == run["run_id"]
    assert body["status"] == "success"
    assert body["values"]["refund_amount"] == 5.0
    expected = hmac.new(RUN_SECRET.encode(), called["body"], hashlib.sha256).hexdigest()
    assert called["headers"]["X-Holdpoint-Signature"] == f"sha256={expected}"
    assert agent.runs.get(thread_id, run["run_id"])["kwargs"]["webhook"] == f"{receiver.url}/runs"


@pytest.mark.parametrize(
    ("webhook", "says"),
    [
        ("https://evil.example/hook", "not on the allow-list"),
        ("ftp://127.0.0.1/hook", "not an http"),
    ],
)
def test_a_run_with_a_webhook_the_server_may_not_call_is_a_422_recording_nothing(
    server, webhook, says
):
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    head = server.head()
    with server.http("agent") as http:
        refused = http.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "refund", "input": {"refund_amount": 1.0}, "webhook": webhook},
        )
    assert refused.status_code == 422
    assert says in refused.json()["detail"]
    assert server.head() == head


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.1.2.3", "192.168.0.10", "169.254.169.254", "[::1]", "0.0.0.0"]
)
def test_loopback_private_and_reserved_addresses_are_refused_unless_allowed(address):
    strict = Notifications(allow_hosts=("*",))
    with pytest.raises(HostRefusedError, match="loopback, private or reserved"):
        check_url(f"http://{address}/hook", strict)
    check_url(
        f"http://{address}/hook", Notifications(allow_hosts=("*",), allow_private_networks=True)
    )


def test_the_allow_list_matches_a_host_its_subdomains_or_any():
    public = "http://93.184.216.34/hook"
    check_url(public, Notifications(allow_hosts=("93.184.216.34",)))
    with pytest.raises(HostRefusedError, match="allow-list"):
        check_url("http://hooks.example.com/x", Notifications(allow_hosts=("example.com",)))
    with pytest.raises(HostRefusedError, match="allow-list"):
        check_url("http://badexample.com/x", Notifications(allow_hosts=("*.example.com",)))


def test_a_target_at_a_host_refused_at_sending_time_is_recorded_refused(tmp_path, receiver):
    os.environ["TEST_OPS_SECRET"] = SECRET
    table = {
        "allow_hosts": ["127.0.0.1"],  # on the list, but a loopback address: refused
        "poll_seconds": 0.05,
        "targets": [
            {"name": "local", "url": f"{receiver.url}/local", "secret_env": "TEST_OPS_SECRET"}
        ],
    }
    with running_server(f"sqlite:///{tmp_path / 'h.db'}", notifications=table) as server:
        paused(server)
        [refused] = wait_until(
            lambda: server.services.deliveries.listed(status="refused"), "the refusal"
        )
    assert "loopback" in refused.attempt_log[0]["error"]
    assert refused.attempts == 0
    assert receiver.at("/local") == []


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"targets": [{"name": "x", "url": "https://h.example/"}]}, "secret_env"),
        ({"targets": [{"name": "x", "url": "ftp://h/", "kind": "slack"}]}, r"http\(s\)"),
        (
            {"targets": [{"name": "x", "url": "https://h/", "kind": "slack", "events": ["x"]}]},
            "events",
        ),
        ({"allow_hosts": "h.example"}, "list of host names"),
        ({"max_attempts": 0}, "above 0"),
        ({"targets": [{"name": "x", "url": "https://h/", "secret_env": "NO_SUCH_VARIABLE"}]}, "16"),
        ({"colour": "red"}, "unknown setting"),
    ],
)
def test_settings_that_would_not_work_are_refused_at_start_naming_why(table, says):
    with pytest.raises(ValueError, match=says):
        notifications(table)
