"""Threads reserved without a graph, in the store, on each store kind: given
reservations, when another process looks or the principal reserves too many, then
what is found and what is refused.

A second `Reservations` on a store opened again from the same URL stands for another
server process, or the same server after a restart (a memory store is private to its
process: those tests skip it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.errors import ThreadExistsError
from domain.record.application import Workflows
from domain.record.store import open_store
from service.errors import TooManyReservationsError
from service.read_models import side_tables_for
from service.reservations import Reservations


@pytest.fixture
def reservations(store: Workflows) -> Iterator[Reservations]:
    made = Reservations(side_tables_for(store))
    yield made
    made.db.close()


@pytest.fixture
def elsewhere(store: Workflows) -> Iterator[Reservations]:
    """The reservations as another process on the same store (or a restart) sees them."""
    if store.url.startswith("memory"):
        pytest.skip("a memory store is private to its process")
    with open_store(store.url) as other:
        made = Reservations(side_tables_for(other))
        yield made
        made.db.close()


def test_a_reservation_keeps_its_metadata_creator_and_moment(reservations):
    made = reservations.add("t-1", {"case": "refund", "n": [1, 2]}, "agent-1")

    found = reservations.get("t-1")

    assert found == made
    assert (found.metadata, found.created_by) == ({"case": "refund", "n": [1, 2]}, "agent-1")
    assert reservations.get("t-2") is None


def test_a_thread_reserved_in_one_process_is_found_in_another(reservations, elsewhere):
    made = reservations.add("t-1", {"case": "refund"}, "agent-1")

    assert elsewhere.get("t-1") == made
    assert elsewhere.all() == [made]


def test_a_thread_id_is_reserved_once_whichever_process_asks(reservations, elsewhere):
    reservations.add("t-1", {}, "agent-1")

    with pytest.raises(ThreadExistsError, match="'t-1' already exists"):
        elsewhere.add("t-1", {"other": True}, "agent-2")
    assert reservations.get("t-1").created_by == "agent-1"


def test_a_principal_over_the_limit_is_refused_and_nothing_is_forgotten(store):
    # Given a principal holding as many reservations as allowed
    reservations = Reservations(side_tables_for(store), limit=2)
    reservations.add("t-1", {}, "agent-1")
    reservations.add("t-2", {}, "agent-1")

    # When they reserve one more, it is refused, naming them and what to do
    with pytest.raises(TooManyReservationsError, match="'agent-1' already holds 2 reserved"):
        reservations.add("t-3", {}, "agent-1")

    # Then the older ones are all still there, and another principal may still reserve
    reservations.add("t-4", {}, "agent-2")
    assert [r.thread_id for r in reservations.all()] == ["t-1", "t-2", "t-4"]
    assert reservations.get("t-3") is None


def test_a_run_s_drop_forgets_the_reservation_it_looked_up_in_every_process(
    reservations, elsewhere
):
    # Given a thread reserved by one process, and looked up by another preparing its run
    reservations.add("t-1", {}, "agent-1")
    assert elsewhere.get("t-1") is not None

    # When that process's run begins and drops it
    elsewhere.drop("t-1")

    # Then no process finds it any more
    assert reservations.get("t-1") is None
    assert elsewhere.all() == []


def test_dropping_a_thread_that_was_never_reserved_does_nothing(reservations):
    reservations.add("t-1", {}, "agent-1")

    reservations.drop("t-2")

    assert [r.thread_id for r in reservations.all()] == ["t-1"]


def test_all_lists_reservations_oldest_first(reservations):
    for thread_id in ("t-b", "t-a", "t-c"):
        reservations.add(thread_id, {}, "agent-1")

    assert [r.thread_id for r in reservations.all()] == ["t-b", "t-a", "t-c"]
