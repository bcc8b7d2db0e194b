"""`api.ui.decidable.refusal`: whether a viewer may decide an open interrupt, and why not.

Given threads paused at their interrupts on a memory store, each reason a decision
would be refused is named before any form is shown, with its code on record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.ui.access import Viewer
from api.ui.decidable import Refusal, refusal
from domain.access.identity import Principal
from domain.oversight.suspensions import Suspensions
from domain.record.store import open_store
from service.decisions import Decision, decide
from service.graph_loader import load_graphs
from service.services import Services
from service.sessions import Session
from service.settings import ServerSettings
from tests.api.http_graphs import served_test_graphs

AGENT = Principal("agent-7", "agent", "k-agent")
RITA = Principal("rita", "reviewer", "k-rita")
SAM = Principal("sam", "reviewer", "k-sam")
ADA = Principal("ada", "admin", "k-ada")
AUDITOR = Principal("abe", "auditor", "k-abe")


@pytest.fixture
def services() -> Iterator[Services]:
    store = open_store("memory://")
    graphs = {**load_graphs([], store), **served_test_graphs(store)}
    built = Services.build(ServerSettings(store_url="memory://"), store, graphs)
    built.read_models.start()
    yield built
    built.close()
    store.close()


def viewer(services: Services, principal: Principal) -> Viewer:
    session = Session("s", principal.key_id, 0.0, 0.0, 0.0)
    return Viewer(principal, session, services.settings.roles.permissions(principal.role))


def paused(services: Services, graph_id: str, started_by: Principal, state: Any) -> Any:
    """The thread `graph_id` paused at its interrupt, started by `started_by`; its interrupt id."""
    thread_id = f"{graph_id}-{started_by.id}"
    config = {"configurable": {"thread_id": thread_id, "actor": started_by.as_actor()}}
    output = services.graphs[graph_id].invoke(state, config)
    return services.store.thread(thread_id), str(output["__interrupt__"][0].id)


def why(services: Services, principal: Principal, thread: Any, interrupt_id: str) -> Any:
    return refusal(services, viewer(services, principal), thread, interrupt_id)


def test_a_reviewer_may_decide_a_refund_someone_else_started(services):
    thread, interrupt_id = paused(services, "refund", AGENT, {"refund_amount": 250})

    assert why(services, RITA, thread, interrupt_id) is None


def test_a_role_without_the_decide_permission_is_told_so(services):
    thread, interrupt_id = paused(services, "refund", AGENT, {"refund_amount": 250})

    found = why(services, AUDITOR, thread, interrupt_id)

    assert found == Refusal("wrong_role", "Role 'auditor' may not decide interrupts on this server")


def test_an_interrupt_for_admins_is_refused_to_a_reviewer_and_offered_to_an_admin(services):
    thread, interrupt_id = paused(services, "guarded", AGENT, {"amount": 10})

    found = why(services, RITA, thread, interrupt_id)

    assert found is not None
    assert found.code == "wrong_role"
    assert "may be answered by role 'admin'" in found.message
    assert why(services, ADA, thread, interrupt_id) is None


def test_whoever_started_the_thread_may_not_decide_it(services):
    thread, interrupt_id = paused(services, "refund", RITA, {"refund_amount": 250})

    found = why(services, RITA, thread, interrupt_id)

    assert found is not None
    assert found.code == "separation_of_duties"
    assert why(services, SAM, thread, interrupt_id) is None


def test_a_reviewer_who_approved_once_may_not_give_the_second_approval(services):
    thread, interrupt_id = paused(services, "four_eyes", AGENT, {"amount": 10})
    decide(services, RITA, Decision(interrupt_id, "approve"), "test")
    thread = services.store.thread("four_eyes-agent-7")  # as it stands after one approval

    found = why(services, RITA, thread, interrupt_id)

    assert found is not None
    assert found.code == "four_eyes"
    assert why(services, SAM, thread, interrupt_id) is None


def test_no_one_may_decide_on_a_suspended_graph(services):
    thread, interrupt_id = paused(services, "refund", AGENT, {"refund_amount": 250})
    Suspensions(services.store).suspend("refund", ADA.as_actor(), "incident 7")

    found = why(services, RITA, thread, interrupt_id)

    assert found is not None
    assert found.code == "suspended"
    assert "incident 7" in found.message
