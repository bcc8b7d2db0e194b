"""Escalation chains: given an interrupt whose deadline escalates, when its deadlines pass,
then it moves up the chain, each step with a fresh deadline, and ends by its terminal
rule; a chain without one escalates at most MAX_ESCALATIONS times, the last leaving the
question open for its role with no deadline: it never repeats without end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import pytest

from domain.errors import InvalidUpdateError
from domain.graph import END, START, StateGraph
from domain.record.thread import WorkflowThread
from domain.record.thread_commands import MAX_ESCALATIONS
from domain.types import expiry_rule, interrupt

NOW = datetime.now(UTC)


class Refund(TypedDict):
    approved: Any


def paused(store, on_expiry: str, thread_id: str = "t") -> str:
    def ask(state: Refund) -> dict[str, Any]:
        return {"approved": interrupt("approve?", deadline=60, on_expiry=on_expiry)}

    builder = StateGraph(Refund)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=store, name="refund")
    graph.invoke({"approved": None}, {"configurable": {"thread_id": thread_id}})
    [interrupt_id] = store.thread(thread_id).interrupts
    return interrupt_id


def expire_all(store, interrupt_id: str, thread_id: str = "t", times: int = 10) -> list[Any]:
    """Let each deadline pass in turn, as the deadline worker would, `times` times at most."""
    for minute in range(1, times + 1):
        store.expire(thread_id, interrupt_id, NOW + timedelta(minutes=2 * minute))
    return [
        e for e in store.thread_events(thread_id) if isinstance(e, WorkflowThread.InterruptExpired)
    ]


def test_a_chain_moves_up_its_roles_then_ends_by_its_terminal_rule(store):
    interrupt_id = paused(store, "escalate:reviewer,escalate:admin,then:reject")
    expiries = expire_all(store, interrupt_id)
    assert [(e.rule["action"], e.rule.get("role")) for e in expiries] == [
        ("escalate", "reviewer"),
        ("escalate", "admin"),
        ("decide", None),
    ]
    assert (expiries[-1].rule["decision"], expiries[-1].rule["resume"]) == ("reject", False)
    assert all(e.new_due_by is not None for e in expiries[:2])
    assert store.thread("t").interrupts == {}  # decided by the terminal rule


def test_an_escalation_without_a_terminal_rule_stops_after_the_bound(store):
    interrupt_id = paused(store, "escalate:admin")
    expiries = expire_all(store, interrupt_id)
    assert len(expiries) == MAX_ESCALATIONS
    assert [e.new_due_by is None for e in expiries] == [False] * (MAX_ESCALATIONS - 1) + [True]
    record = store.thread("t").interrupts[interrupt_id]
    assert (record["required_role"], record["due_by"]) == ("admin", None)  # open, no deadline


@pytest.mark.parametrize(
    "on_expiry",
    ["then:reject", "escalate:admin,reject", "escalate:admin,then:maybe", "escalate:,then:reject"],
)
def test_a_chain_that_does_not_parse_is_refused_naming_the_form(on_expiry):
    with pytest.raises(InvalidUpdateError, match="terminal rule"):
        expiry_rule(on_expiry)


def test_the_single_rules_read_as_before():
    assert expiry_rule("reject") == {"action": "decide", "decision": "reject", "resume": False}
    assert expiry_rule("escalate:admin") == {"action": "escalate", "role": "admin"}
    assert expiry_rule("escalate:manager,then:approve") == {
        "action": "escalate",
        "role": "manager",
        "then": {"action": "decide", "decision": "approve", "resume": True},
    }
