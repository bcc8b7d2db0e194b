"""The decision use case, `service.decisions.decide`, without HTTP.

Given a refund paused at its hold point on a memory store, when a person decides, then
the thread records one InterruptResumed naming them and the node runs again; a retry
with the same Idempotency-Key gets the same event and records nothing; every refusal is
a typed error, with nothing recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from eventsourcing.utils import get_topic

from domain.access.identity import Principal, RefusedAttempt
from domain.errors import OversightError, WrongRoleError
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from service.decisions import Decision, decide, refusal_of
from service.errors import (
    IdempotencyKeyReusedError,
    InterruptNeverRaisedError,
    InterruptNotOpenError,
)
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings

WAIT = 10.0  # seconds a run may take to finish; a pass does not wait that long
AGENT = Principal("agent-7", "agent", "k-agent")
RITA = Principal("rita", "reviewer", "k-rita")
ACTION = "POST /approvals/{id}/decision"


@pytest.fixture
def services() -> Iterator[Services]:
    store = open_store("memory://")
    built = Services.build(ServerSettings(store_url="memory://"), store, load_graphs([], store))
    built.read_models.start()
    yield built
    built.close()
    store.close()


def paused_refund(services: Services, thread_id: str = "refund-1") -> str:
    """A $250 refund the agent started, paused at its interrupt; the interrupt's id."""
    config = {"configurable": {"thread_id": thread_id, "actor": AGENT.as_actor()}}
    output = services.graphs["refund"].invoke({"refund_amount": 250}, config)
    return str(output["__interrupt__"][0].id)


def events_of(services: Services, thread_id: str = "refund-1") -> list[Any]:
    return list(services.store.thread_events(thread_id))


def refusals(services: Services) -> list[str]:
    """The topics of every AccessRefused in the store's log."""
    topic = get_topic(RefusedAttempt.AccessRefused)
    recorder = services.store.recorder
    return [n.topic for n in recorder.select_notifications(1, 10_000, topics=[topic])]


def finished(services: Services, decided: Any) -> None:
    record = services.runs.local(decided.event.run_id)
    assert record is not None
    assert record.wait_blocking(WAIT)


def test_an_approval_records_who_decided_and_the_node_runs_again(services):
    # Given
    interrupt_id = paused_refund(services)

    # When
    decided = decide(services, RITA, Decision(interrupt_id, "approve", reason="ok"), ACTION)

    # Then
    assert isinstance(decided.event, WorkflowThread.InterruptResumed)
    assert (decided.thread_id, decided.graph_id) == ("refund-1", "refund")
    assert decided.event.actor["id"] == "rita"
    assert (decided.event.decision, decided.event.reason) == ("approve", "ok")
    finished(services, decided)
    thread = services.store.thread("refund-1")
    assert thread is not None
    assert thread.values["outcome"] == "Refund of $250 processed."


def test_a_retry_with_the_same_key_gets_the_same_answer_and_records_nothing(services):
    # Given
    interrupt_id = paused_refund(services)
    decision = Decision(interrupt_id, "approve", idempotency_key="once")
    first = decide(services, RITA, decision, ACTION)
    finished(services, first)
    before = len(events_of(services))

    # When
    again = decide(services, RITA, decision, ACTION)

    # Then
    assert (again.event.originator_version, again.event.run_id) == (
        first.event.originator_version,
        first.event.run_id,
    )
    assert len(events_of(services)) == before


def test_the_same_key_for_another_answer_is_refused(services):
    # Given
    interrupt_id = paused_refund(services)
    decide(services, RITA, Decision(interrupt_id, "approve", idempotency_key="once"), ACTION)
    before = len(events_of(services))

    # When / Then
    with pytest.raises(IdempotencyKeyReusedError, match="already used"):
        decide(services, RITA, Decision(interrupt_id, "reject", idempotency_key="once"), ACTION)
    assert len(events_of(services)) == before


def test_an_interrupt_never_raised_is_refused_as_unknown(services):
    # Given
    paused_refund(services)

    # When
    with pytest.raises(InterruptNeverRaisedError) as refused:
        decide(services, RITA, Decision("0" * 32, "approve"), ACTION)

    # Then
    assert refusal_of(refused.value) == "unknown_interrupt"


def test_a_second_answer_is_refused_naming_the_first(services):
    # Given
    interrupt_id = paused_refund(services)
    finished(services, decide(services, RITA, Decision(interrupt_id, "approve"), ACTION))
    before = len(events_of(services))

    # When
    with pytest.raises(InterruptNotOpenError) as refused:
        decide(services, RITA, Decision(interrupt_id, "reject"), ACTION)

    # Then
    assert "already decided (approve) by rita" in str(refused.value)
    assert refusal_of(refused.value) == "stale_interrupt"
    assert len(events_of(services)) == before


def test_the_agent_cannot_answer_and_the_domain_records_the_refusal(services):
    # Given
    interrupt_id = paused_refund(services)

    # When
    with pytest.raises(WrongRoleError) as refused:
        decide(services, AGENT, Decision(interrupt_id, "approve"), ACTION)

    # Then: the hold point's own refusal is on record once, not again at the edge
    assert len(refusals(services)) == 1
    assert isinstance(refused.value, OversightError)
    assert refusal_of(refused.value) is None
    thread = services.store.thread("refund-1")
    assert thread is not None
    assert interrupt_id in thread.interrupts
