"""The decision register over HTTP (`GET /reports/decisions`): given refunds decided by a
reviewer, when an auditor asks for the register as JSON or CSV, then one row per
decision with who, in which role, why and how long it took; a period selects; text a
spreadsheet would run is guarded; only auditors read it."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from tests.api.http_harness import running_server

REASONS = ("Receipt checked", '=HYPERLINK("http://evil")')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        agent = running.sdk("agent")
        for amount, reason in zip((250.0, 300.0), REASONS, strict=True):
            thread_id = agent.threads.create()["thread_id"]
            paused = agent.runs.wait(thread_id, "refund", input={"refund_amount": amount})
            interrupt_id = paused["__interrupt__"][0]["id"]
            with running.http("reviewer") as reviewer:
                decided = reviewer.post(
                    f"/approvals/{interrupt_id}/decision",
                    json={"decision": "approve", "reason": reason},
                )
                assert decided.status_code == 200, decided.text
        yield running


def register(server, **query):
    with server.http("auditor") as auditor:
        return auditor.get("/reports/decisions", params=query)


def test_the_register_has_a_row_per_decision_with_who_why_and_how_long(server):
    answer = register(server)
    assert answer.status_code == 200
    rows = answer.json()["decisions"]
    assert [(r["decider_id"], r["decider_role"], r["decision"], r["by"]) for r in rows] == [
        ("reviewer", "reviewer", "approve", "answer")
    ] * 2
    assert [r["reason"] for r in rows] == list(REASONS)
    assert all(r["graph_id"] == "refund" and r["question_digest"] for r in rows)
    assert all(r["seconds_to_decide"] >= 0 for r in rows)


def test_the_csv_has_the_columns_and_guards_formulas(server):
    answer = register(server, format="csv")
    assert answer.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert [row["reason"] for row in rows] == ["Receipt checked", '\'=HYPERLINK("http://evil")']
    assert rows[0]["decider_id"] == "reviewer"


def test_a_period_selects_and_a_backwards_one_is_a_422(server):
    now = datetime.now(UTC).isoformat()
    assert register(server, since=now).json()["decisions"] == []
    assert len(register(server, until=now).json()["decisions"]) == 2
    refused = register(server, since=now, until="2020-01-01")
    assert refused.status_code == 422
    assert "before until" in refused.json()["detail"]


def test_only_auditors_read_the_register(server):
    for who in ("agent", "reviewer"):
        with server.http(who) as client:
            assert client.get("/reports/decisions").status_code == 403
