"""A served graph that declares personal data: a module's compiled graph keeps its
declaration when the server compiles it on its store, so a run started and decided over
HTTP records the values sealed, the API shows them while the key is kept, and after an
erasure shows them erased, with the runs' cached requests cleared too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from domain.privacy.envelopes import ERASED
from domain.record.thread_uuids import thread_uuid
from service.erasure import erase
from service.graph_loader import GraphSource, load_graph
from tests.api.http_harness import Server, postgres_schema_url, running_server
from tests.personal_threads import ALICE, REVIEWER, plaintexts

GRAPH = "refund-personal"
MODULE = (
    "from tests.personal_threads import PERSONAL, refund_builder\n"
    "graph = refund_builder().compile(personal=PERSONAL)\n"
)


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path: Path):
    module = tmp_path / "personal_refund.py"
    module.write_text(MODULE)

    def graphs(store: Any) -> dict[str, Any]:
        return {GRAPH: load_graph(GraphSource(GRAPH, module, "graph"), store)}

    if request.param == "sqlite":
        with running_server(f"sqlite:///{tmp_path / 'h.db'}", extra=graphs) as started:
            yield started
        return
    with postgres_schema_url() as url, running_server(url, extra=graphs) as started:
        yield started


def stored(server: Server, thread_id: str) -> bytes:
    rows = server.store.recorder.select_events(thread_uuid(thread_id))
    return b"".join(bytes(row.state) for row in rows)


def test_a_run_over_http_records_the_values_sealed_and_an_erasure_clears_them(server):
    # Given Alice's refund asked for over HTTP, waiting for a review
    client = server.sdk("agent")
    metadata = {"graph_id": GRAPH, "customer_id": ALICE["customer_id"]}
    client.threads.create(thread_id="alice-1", metadata=metadata)
    person = {"email": ALICE["email"], "name": ALICE["name"], "amount": 150.0}
    client.runs.wait("alice-1", GRAPH, input=person)
    # When a reviewer sees it in the queue and approves it
    with server.http("reviewer") as reviewer:
        [item] = reviewer.get("/approvals").json()["data"]
        assert item["payload"]["email"] == ALICE["email"]  # shown while the key is kept
        decided = reviewer.post(
            f"/approvals/{item['interrupt_id']}/decision",
            json={"decision": "approve", "reason": "receipt checked"},
        )
        assert decided.status_code == 200, decided.text
    # Then no stored event of the thread holds her values
    assert [value for value in plaintexts(ALICE) if value in stored(server, "alice-1")] == []
    assert client.threads.get_state("alice-1")["values"]["email"] == ALICE["email"]
    # When she is erased
    report = erase(server.store, ALICE["customer_id"], REVIEWER, "request 12")
    # Then every place is clean, the runs' cached request included, and the API shows
    # her values erased
    assert report.clean
    runs = [p for p in report.places if p.name == "holdpoint_runs"]
    assert [(p.before > 0, p.after) for p in runs] == [(True, 0)]
    assert client.threads.get_state("alice-1")["values"]["email"] == ERASED
