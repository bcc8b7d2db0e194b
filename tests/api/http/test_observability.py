"""Metrics, readiness and the OpenAPI document."""

from __future__ import annotations

import re

import pytest

from integrity.sealing import make_seal
from integrity.signing import generate_key, load_private_key
from tests.api.http_harness import PUBLIC_PATHS, server_on

PUBLIC = PUBLIC_PATHS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with server_on("sqlite", tmp_path_factory.mktemp("store")) as running:
        yield running


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in the Prometheus text format."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name} {labels} in\n{text}")


def test_metrics_count_requests_runs_interrupts_decisions_and_read_the_queue(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    paused = sdk.runs.wait(thread_id, "refund", input={"refund_amount": 120.0})
    open_id = paused["__interrupt__"][0]["id"]
    second = sdk.threads.create()["thread_id"]
    decided_id = sdk.runs.wait(second, "refund", input={"refund_amount": 130.0})
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(
            f"/approvals/{decided_id['__interrupt__'][0]['id']}/decision",
            json={"decision": "approve"},
        )
    sdk.runs.join(second, answer.json()["run_id"])
    with server.http("auditor") as auditor:
        assert auditor.get("/approvals", params={"wait_for": server.head()}).status_code == 200
        response = auditor.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    route = "/threads/{thread_id}/runs/wait"
    assert metric(text, "holdpoint_http_requests_total", route=route, status="200") >= 2
    assert metric(text, "holdpoint_runs_total", status="success") >= 3
    assert metric(text, "holdpoint_interrupts_raised_total") >= 2
    assert metric(text, "holdpoint_decisions_total", decision="approve") >= 1
    assert metric(text, "holdpoint_open_approvals") >= 1
    assert metric(text, "holdpoint_oldest_open_approval_age_seconds") > 0
    assert metric(text, "holdpoint_projection_lag_events", projection="pending_approvals") >= 0
    assert 'route="unmatched"' not in text or "/nowhere" not in text
    assert open_id not in text  # labels are routes, never ids


def test_metrics_say_how_many_run_records_the_process_keeps_and_at_most(tmp_path):
    # Given a server that keeps the records of its last 2 runs
    with server_on("sqlite", tmp_path, runs_kept=2) as small:
        sdk = small.sdk("agent")
        # When it has run 3
        for amount in (10.0, 20.0, 30.0):
            thread_id = sdk.threads.create()["thread_id"]
            sdk.runs.wait(thread_id, "refund", input={"refund_amount": amount})
        with small.http("auditor") as auditor:
            text = auditor.get("/metrics").text
    # Then its metrics say it keeps 2, and no more than 2
    assert metric(text, "holdpoint_run_records") == 2
    assert metric(text, "holdpoint_run_records_max") == 2


def test_readiness_reports_the_store_and_each_read_models_lag(server):
    with server.http() as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}
        ready = anonymous.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert body["store"] == "ok"
    assert {p["name"] for p in body["projections"]} == {
        "pending_approvals",
        "thread_index",
        "oversight",
        "memory_items",
        "cron_index",
        "assistant_index",
        "change_log",
        "decision_register",
        "read_records",
        "record_life",
    }
    assert body["lag"] >= 0


def test_every_endpoint_is_documented_with_a_summary_and_its_errors(server):
    with server.http() as anonymous:
        document = anonymous.get("/openapi.json").json()
        docs = anonymous.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()
    operations = [
        (path, method, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    assert len(operations) >= 30
    for path, method, operation in operations:
        assert operation.get("summary"), f"{method} {path} has no summary"
        if path in PUBLIC:
            continue
        responses = operation["responses"]
        for status in ("401", "403", "422"):
            assert status in responses, f"{method} {path} does not document {status}"
        problem = responses["401"]["content"]["application/problem+json"]["schema"]
        assert problem["$ref"].endswith("/ProblemDetail")
    assert {"APIKeyHeader", "HTTPBearer"} <= set(document["components"]["securitySchemes"])


def test_every_route_template_is_a_known_metric_label(server):
    with server.http("auditor") as auditor:
        auditor.get("/nowhere/at/all")
        text = auditor.get("/metrics").text
    labels = set(re.findall(r'route="([^"]+)"', text))
    assert "unmatched" in labels
    assert not any("nowhere" in label for label in labels)


def test_the_oversight_report_in_three_formats(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    interrupt_id = sdk.runs.wait(thread_id, "refund", input={"refund_amount": 101.0})[
        "__interrupt__"
    ][0]["id"]
    with server.http("reviewer2") as reviewer:
        answer = reviewer.post(f"/approvals/{interrupt_id}/decision", json={"decision": "reject"})
    position = answer.headers["X-Holdpoint-Position"]
    with server.http("auditor") as auditor:
        report = auditor.get("/reports/oversight", params={"wait_for": position})
        csv = auditor.get("/reports/oversight", params={"format": "csv", "graph_id": "refund"})
        html = auditor.get("/reports/oversight", params={"format": "html"})
        bad = auditor.get("/reports/oversight", params={"since": "yesterday"})
        backwards = auditor.get(
            "/reports/oversight", params={"since": "2030-01-02", "until": "2030-01-01"}
        )
    figures = report.json()
    assert figures["decisions"]["by_reviewer"]["reviewer2"]["reject"] == 1
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.startswith("section,key,value,how")
    assert html.headers["content-type"].startswith("text/html")
    assert "<svg" in html.text
    assert bad.status_code == 422
    assert "query.since" in bad.json()["detail"]
    assert backwards.status_code == 422


def test_verify_recomputes_the_chains(server):
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    sdk.runs.wait(thread_id, "refund", input={"refund_amount": 3.0})
    with server.http("auditor") as auditor:
        one = auditor.get("/audit/verify", params={"thread_id": thread_id}).json()
        every = auditor.get("/audit/verify", params={"limit": 1000}).json()
    assert one["ok"] is True
    assert one["threads"][0]["events_checked"] == server.event_count(thread_id)
    assert every["ok"] is True
    assert every["checked"] >= 1


def test_metrics_count_verifications_and_say_how_far_the_log_is_from_its_seal(server, tmp_path):
    # Given a store with no seal
    with server.http("auditor") as auditor:
        before = auditor.get("/metrics").text
    assert "holdpoint_last_seal_age_seconds" not in before

    # When it is verified, sealed, and one more thread recorded
    with server.http("auditor") as auditor:
        assert auditor.get("/audit/verify").json()["ok"] is True
    generate_key(tmp_path / "seal.key")
    document, _, problems = make_seal(
        server.store, load_private_key(str(tmp_path / "seal.key")), jobs=1
    )
    assert problems == []
    sdk = server.sdk("agent")
    sdk.runs.wait(sdk.threads.create()["thread_id"], "refund", input={"refund_amount": 4.0})
    with server.http("auditor") as auditor:
        text = auditor.get("/metrics").text

    # Then
    assert metric(text, "holdpoint_verifications_total", result="ok") >= 1
    assert 0 <= metric(text, "holdpoint_last_seal_age_seconds") < 600
    assert metric(text, "holdpoint_events_after_last_seal") == server.head() - document["position"]
    assert server.head() > document["position"]
