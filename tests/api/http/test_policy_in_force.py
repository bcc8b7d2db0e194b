"""The policy in force, on a real server whose settings come from a holdpoint.toml.

Given a holdpoint.toml that sets a graph's interrupt deadline, the rubber-stamp floor and
the retention floor: the first start records the whole policy (`OversightPolicyRecorded`,
the graph's deadline beside its digest); a restart with the same file records nothing;
a changed deadline and a restart record one `OversightPolicyChanged`. A decision names
the version it was made under, and the decision register shows it. Two servers
starting at once on one store with a changed file record the change once. On SQLite and
PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from api.cli.serve import SettingsError, server_settings
from domain.oversight.policy_record import OVERSIGHT_POLICY_ID, OversightPolicy
from domain.record.thread import WorkflowThread
from domain.types import expiry_rule
from service.graph_loader import load_graphs, read_config
from tests.api.http_harness import Server, postgres_schema_url, running_server

GRAPH = """
from typing import Any, TypedDict

from domain.graph import END, START, StateGraph
from domain.types import interrupt


class Refund(TypedDict):
    amount: float
    approved: Any


def ask(state: Refund) -> dict[str, Any]:
    return {"approved": interrupt({"amount": state["amount"]})}


builder = StateGraph(Refund)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
"""
REJECT = expiry_rule("reject")  # as a graph table's on_expiry = "reject" is recorded


def config_file(folder: Path, deadline: int) -> Path:
    """A holdpoint.toml serving `large_refund` with a `deadline` (seconds) on its
    interrupts, a rubber-stamp floor of 20 s and a retention floor of 200 days."""
    (folder / "large_refund.py").write_text(GRAPH)
    path = folder / "holdpoint.toml"
    path.write_text(
        "[server]\nrubber_stamp_seconds = 20\n\n[retention]\nfloor_days = 200\n\n"
        '[graphs.large_refund]\npath = "large_refund.py:builder"\n'
        f'interrupt_deadline = {deadline}\non_expiry = "reject"\n'
    )
    return path


@contextmanager
def serving(url: str, config: Path) -> Iterator[Server]:
    """A server on `url` started as `holdpoint serve --config` would start it."""
    sources, server_table = read_config(config)
    with running_server(
        url, extra=lambda store: load_graphs(sources, store), **server_table
    ) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'holdpoint.db'}"
        return
    with postgres_schema_url() as url:
        yield url


def policies(server: Server) -> list[Any]:
    return list(server.store.events.get(OVERSIGHT_POLICY_ID))


def decided(server: Server) -> tuple[str, WorkflowThread.InterruptRaised, Any]:
    """A refund of 900 paused at its question, then approved by the reviewer over HTTP:
    the thread, the question as raised and the answer as recorded."""
    agent = server.sdk("agent")
    thread_id = agent.threads.create()["thread_id"]
    paused = agent.runs.wait(thread_id, "large_refund", input={"amount": 900.0})
    interrupt_id = paused["__interrupt__"][0]["id"]
    with server.http("reviewer") as reviewer:
        answer = reviewer.post(
            f"/approvals/{interrupt_id}/decision", json={"decision": "approve", "reason": "ok"}
        )
    assert answer.status_code == 200, answer.text
    events = server.store.thread_events(thread_id)
    [raised] = [e for e in events if isinstance(e, WorkflowThread.InterruptRaised)]
    [resumed] = [e for e in events if isinstance(e, WorkflowThread.InterruptResumed)]
    return thread_id, raised, resumed


def deadline_of(raised: WorkflowThread.InterruptRaised) -> int:
    """The seconds from a question's raising to its deadline."""
    assert raised.due_by is not None
    return round((datetime.fromisoformat(raised.due_by) - raised.timestamp).total_seconds())


def test_a_changed_setting_is_recorded_once_and_named_by_the_decisions_after_it(
    store_url, tmp_path
):
    # Given a server started with an hour's deadline for large refunds
    config = config_file(tmp_path, 3600)
    with serving(store_url, config) as first:
        [recorded] = policies(first)
        _, raised, before = decided(first)
        digest = first.services.graphs["large_refund"].digest

    # Then the whole policy is on record, the toml's deadline beside the graph's digest
    assert isinstance(recorded, OversightPolicy.OversightPolicyRecorded)
    assert recorded.actor["via"] == "local"
    policy = recorded.policy
    assert (policy["rubber_stamp_seconds"], policy["retention_floor_days"]) == (20.0, 200)
    assert policy["separation_of_duties"] is True
    assert policy["graphs"]["large_refund"] == {
        "digest": digest,
        "separation_of_duties": True,
        "approvals": 1,
        "amount_field": None,
        "interrupt_deadline": {"seconds": 3600.0, "on_expiry": REJECT},
    }
    # And the decision made under it names version 1; its question had that deadline
    assert deadline_of(raised) == 3600
    assert before.policy_version == 1

    # When the server restarts with the same file
    with serving(store_url, config) as again:
        # Then nothing more is recorded, and the server is under version 1
        assert len(policies(again)) == 1
        assert again.services.policy is not None
        assert (again.services.policy.version, again.services.policy.recorded) == (1, False)

    # When the deadline changes to two hours and the server restarts
    config = config_file(tmp_path, 7200)
    with serving(store_url, config) as changed:
        first_policy, change = policies(changed)
        _, raised, after = decided(changed)
        with changed.http("auditor") as auditor:
            register = auditor.get("/reports/decisions").json()["decisions"]

    # Then one change is on record: the whole set again, with the new deadline
    assert isinstance(change, OversightPolicy.OversightPolicyChanged)
    deadline = change.policy["graphs"]["large_refund"]["interrupt_deadline"]
    assert deadline == {"seconds": 7200.0, "on_expiry": REJECT}
    assert change.digest != first_policy.digest
    # And the decision after it names version 2, and the register shows each version
    assert deadline_of(raised) == 7200
    assert after.policy_version == 2
    assert [(row["decider_id"], row["policy_version"]) for row in register] == [
        ("reviewer", 1),
        ("reviewer", 2),
    ]


def test_two_servers_starting_at_once_record_a_change_once(store_url, tmp_path):
    # Given a store a server has run on (its tables made: two servers making a store's
    # tables at once is another race), and then a changed holdpoint.toml
    with serving(store_url, config_file(tmp_path, 3600)):
        pass
    config = config_file(tmp_path, 7200)
    both_up, stop = threading.Barrier(3, timeout=120), threading.Event()
    servers: list[Server] = []
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            with serving(store_url, config) as server:
                servers.append(server)
                both_up.wait()
                stop.wait()
        except BaseException as error:  # reported by the test, below
            failures.append(error)
            both_up.abort()

    # When two servers start at once
    threads = [threading.Thread(target=serve) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        try:
            both_up.wait()
        except threading.BrokenBarrierError:
            pytest.fail(f"a server did not start: {failures!r}")
        # Then the change is on record once, and both are under its version 2
        kinds = [type(e).__name__ for e in policies(servers[0])]
        assert kinds == ["OversightPolicyRecorded", "OversightPolicyChanged"]
        assert [s.services.policy.version for s in servers if s.services.policy] == [2, 2]
        assert sorted(s.services.policy.recorded for s in servers if s.services.policy) == [
            False,
            True,
        ]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert failures == []


@pytest.mark.parametrize("days", [90, 182])
def test_a_retention_floor_under_six_months_stops_the_start(tmp_path, days):
    # Given a holdpoint.toml whose retention floor is under 183 days
    config = config_file(tmp_path, 3600)
    config.write_text(config.read_text().replace("floor_days = 200", f"floor_days = {days}"))
    _, server_table = read_config(config)

    # When the server's settings are read, then they are refused, naming the floor
    with pytest.raises(SettingsError, match=r"floor_days\) must be at least 183 days"):
        server_settings(str(config), server_table, {})
