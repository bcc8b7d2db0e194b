"""The erasure report, in process, on every store kind (the CLI's is tests/api/cli)."""

from __future__ import annotations

from service.erasure import EVENTS, KEYS, erase
from tests.personal_threads import ALICE, BOB, REVIEWER, decide, refund_graph, start


def test_the_report_names_each_place_and_finds_nothing_after(store):
    # Given two customers' refunds
    graph = refund_graph(store)
    start(graph, "alice-1", ALICE)
    decide(graph, "alice-1")
    start(graph, "bob-1", BOB)
    said: list[str] = []
    # When Alice is erased
    report = erase(store, ALICE["customer_id"], REVIEWER, "request 12", said.append)
    # Then the report covers the events and the keys, and finds nothing of her after
    kinds = {place.kind for place in report.places}
    assert {EVENTS, KEYS} <= kinds
    assert report.clean
    assert all(place.after == 0 for place in report.places)
    assert report.threads == ["alice-1"]
    assert report.values >= 5
    assert report.searched >= len(ALICE)  # her id, email and name, and their JSON forms
    assert said[0].startswith("Destroyed the key of subject ")
    # And erasing her again finds nothing more to erase
    again = erase(store, ALICE["customer_id"], REVIEWER, "request 13")
    assert (again.key_destroyed, again.values, again.clean) == (False, report.values, True)
