"""Threads of every outcome, recorded long ago or lately, for the retention tests.

The thread module's clock is set back (`fake_clock`), as a store that has run for a
year would hold them: completed, waiting at an interrupt, cancelled, failed, and one
answered that a test puts under a legal hold.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest

from domain.record.application import Workflows
from domain.types import Command
from integrity.signing import generate_key
from tests.clock import Clock, set_clock
from tests.graphs import linear_graph, refund_graph

NOW = datetime.now(UTC)
LONG_AGO = NOW - timedelta(days=400)
LATELY = NOW - timedelta(days=30)
OPERATOR = {"id": "dpo", "role": "admin"}
AGENT = {"id": "agent-7", "role": "agent"}
REVIEWER = {"id": "rita", "role": "reviewer"}


def fake_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Events are stamped with `clock.now`, LONG_AGO to begin with."""
    return set_clock(monkeypatch, LONG_AGO)


def seal_key(tmp_path: Path) -> Path:
    """A new seal key's file."""
    path = tmp_path / "seal.pem"
    generate_key(path)
    return path


class Flaky(TypedDict):
    fail: bool


def check(state: Flaky) -> dict[str, Any]:
    if state["fail"]:
        raise ValueError("the supplier's API is down")
    return {}


def config(thread_id: str, actor: dict[str, Any] = AGENT) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "actor": actor}}


def record_outcomes(store: Workflows, clock: Clock, when: datetime, prefix: str) -> None:
    """One thread of each outcome, stamped at `when`."""
    clock.now = when
    refunds = refund_graph(store)
    refunds.invoke({"refund_amount": 10.0, "approved": False}, config(f"{prefix}-completed"))
    refunds.invoke(Command(resume=True), config(f"{prefix}-completed", REVIEWER))
    refunds.invoke({"refund_amount": 20.0, "approved": False}, config(f"{prefix}-waiting"))
    refunds.invoke({"refund_amount": 30.0, "approved": False}, config(f"{prefix}-cancelled"))
    store.cancel(f"{prefix}-cancelled", OPERATOR, "customer withdrew")
    flaky = linear_graph(store, Flaky, check, name="flaky")
    with pytest.raises(ValueError, match="down"):
        flaky.invoke({"fail": True}, config(f"{prefix}-failed"))
    refunds.invoke({"refund_amount": 40.0, "approved": False}, config(f"{prefix}-held"))
    refunds.invoke(Command(resume=False), config(f"{prefix}-held", REVIEWER))
