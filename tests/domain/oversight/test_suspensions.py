"""A graph's suspension as recorded facts: suspended and lifted with who and why, never
without a reason, never twice in a row; a suspended graph is refused by `check`."""

from __future__ import annotations

import pytest

from domain.errors import GraphSuspendedError, ReasonRequiredError, SuspensionStateError
from domain.oversight.suspension import suspension_uuid
from domain.oversight.suspensions import Suspensions

REVIEWER = {"id": "rita", "role": "reviewer"}
ADMIN = {"id": "ada", "role": "admin"}


@pytest.fixture
def suspensions(store):
    return Suspensions(store)


def kinds(store, graph_id="refund"):
    return [type(e).__name__ for e in store.events.get(suspension_uuid(graph_id))]


def test_a_suspended_graph_is_refused_until_lifted_each_step_recorded(store, suspensions):
    suspensions.check("refund")  # a graph never suspended may run
    suspensions.suspend("refund", REVIEWER, "wrong refunds paid out")
    with pytest.raises(GraphSuspendedError, match="by rita: wrong refunds paid out"):
        suspensions.check("refund")
    suspensions.check("content_review")  # another graph is not touched
    suspensions.lift("refund", ADMIN, "fixed in release 2")
    suspensions.check("refund")
    suspensions.suspend("refund", ADMIN, "again")
    assert suspensions.suspended("refund") == {"by": "ada", "reason": "again"}
    assert kinds(store) == ["GraphSuspended", "SuspensionLifted", "GraphResuspended"]
    lifted = list(store.events.get(suspension_uuid("refund")))[1]
    assert (lifted.actor, lifted.reason) == (ADMIN, "fixed in release 2")


@pytest.mark.parametrize("reason", [None, "", "  "])
def test_no_suspension_or_lift_without_a_reason(store, suspensions, reason):
    with pytest.raises(ReasonRequiredError, match="needs a reason"):
        suspensions.suspend("refund", REVIEWER, reason)
    assert kinds(store) == []
    suspensions.suspend("refund", REVIEWER, "stop")
    with pytest.raises(ReasonRequiredError):
        suspensions.lift("refund", ADMIN, reason)
    assert kinds(store) == ["GraphSuspended"]


def test_a_suspension_twice_or_a_lift_of_none_is_refused(store, suspensions):
    with pytest.raises(SuspensionStateError, match="not suspended"):
        suspensions.lift("refund", ADMIN, "nothing to lift")
    suspensions.suspend("refund", REVIEWER, "stop")
    with pytest.raises(SuspensionStateError, match="suspended already"):
        suspensions.suspend("refund", ADMIN, "stop again")
    assert kinds(store) == ["GraphSuspended"]
