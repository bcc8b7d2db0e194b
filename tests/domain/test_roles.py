"""Custom roles: given a holdpoint.toml's `[roles]`, the set in force is checked at start
(an unknown permission or a built-in role redefined is refused, naming it), recorded
when it changes and only then, and a key's scope is checked on each decision."""

from __future__ import annotations

import re

import pytest

from domain.access.role_catalogue import RoleCatalogue
from domain.access.role_records import record_roles, recorded_roles
from domain.access.roles import BUILT_IN, custom_roles
from domain.access.scope import check_scope
from domain.errors import InvalidRolesError, OutOfScopeError

OPERATOR = {"id": "ops", "role": None, "authenticated": False, "via": "local"}
MANAGER = {"manager": {"permissions": ["read", "decide", "queue"]}}


def catalogue_events(store):
    return list(store.events.get(RoleCatalogue.create_id()))


def test_a_custom_role_holds_the_permissions_it_names_and_the_built_in_roles_stay():
    roles = custom_roles(MANAGER)

    assert roles.names() == ("agent", "reviewer", "auditor", "admin", "manager")
    assert roles.permissions("manager") == ("read", "decide", "queue")
    assert roles.holding("decide") == ("reviewer", "admin", "manager")
    assert roles.permissions("agent") == BUILT_IN.permissions("agent")
    assert roles.permissions("nobody") == ()


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"manager": {"permissions": ["decide", "approve"]}}, "unknown permission 'approve'"),
        ({"reviewer": {"permissions": ["read"]}}, "Role 'reviewer' is built in"),
        ({"manager": {"permissions": []}}, "Role 'manager' needs its permissions"),
        ({"manager": {"permission": ["read"]}}, "Role 'manager' needs its permissions"),
        ({"Big Boss": {"permissions": ["read"]}}, "Role 'Big Boss': a role's name"),
        (["manager"], "must be a table of roles"),
    ],
)
def test_a_bad_roles_table_is_refused_naming_what_is_wrong(table, says):
    with pytest.raises(InvalidRolesError, match=says):
        custom_roles(table)


def test_roles_are_recorded_when_they_change_and_only_then(store):
    # Given nothing on record: no custom role records nothing
    assert not record_roles(store, BUILT_IN, OPERATOR)
    assert catalogue_events(store) == []

    # When a manager role is configured, twice
    assert record_roles(store, custom_roles(MANAGER), OPERATOR)
    assert not record_roles(store, custom_roles(MANAGER), OPERATOR)

    # And then removed
    assert record_roles(store, BUILT_IN, OPERATOR)

    # Then two events: the set configured, with who, and the empty set after
    first, second = catalogue_events(store)
    assert isinstance(first, RoleCatalogue.RolesConfigured)
    assert (first.roles, first.actor) == ({"manager": ["read", "decide", "queue"]}, OPERATOR)
    assert isinstance(second, RoleCatalogue.RolesReconfigured)
    assert second.roles == {}
    assert recorded_roles(store).names() == BUILT_IN.names()


def test_the_roles_on_record_are_read_by_another_process(store):
    record_roles(store, custom_roles(MANAGER), OPERATOR)

    assert recorded_roles(store).permissions("manager") == ("read", "decide", "queue")


SCOPED = {"id": "lim", "role": "manager", "scope": {"graphs": ["refund"], "max_amount": 500}}


@pytest.mark.parametrize(
    ("graph_id", "payload", "field", "says"),
    [
        ("payout", {"amount": 10}, "amount", "Graph 'payout' is outside the scope"),
        ("refund", {"amount": 501}, "amount", "The amount 501 (amount) is above the limit"),
        ("refund", {"amount": 10}, None, "names no amount field"),
        ("refund", {"amount": "10"}, "amount", "has no number at 'amount'"),
        ("refund", {"refund": {"amount": 900}}, "refund.amount", "above the limit"),
    ],
)
def test_a_decision_outside_the_scope_is_refused_saying_why(graph_id, payload, field, says):
    with pytest.raises(OutOfScopeError, match=re.escape(says)) as refused:
        check_scope(SCOPED, graph_id, payload, field)
    assert refused.value.reason == "out_of_scope"


def test_a_decision_within_the_scope_or_by_a_key_without_one_passes():
    check_scope(SCOPED, "refund", {"amount": 500}, "amount")
    check_scope(SCOPED, "refund", {"refund": {"amount": 20.5}}, "refund.amount")
    check_scope({"id": "rita", "role": "reviewer"}, "payout", {"amount": 10**9}, None)
