"""`threads.update`: a thread's metadata, updated on record (MetadataUpdated, with who).

The keys given are merged into the metadata, the thread index follows (a search finds the
thread by them), and the audit timeline names who set them. The graph's keys cannot be
set, a `ttl` is refused (retention is policy-bound), a thread not run yet is a 409, and a
key set to its value already records nothing."""

from __future__ import annotations

import pytest

from tests.api.http_harness import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("store")
    with running_server(f"sqlite:///{folder / 'holdpoint.db'}") as running:
        yield running


def test_metadata_is_merged_on_record_and_searchable(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create(metadata={"graph_id": "refund", "customer": "acme"})[
        "thread_id"
    ]
    updated = agent.threads.update(thread_id, metadata={"ticket": "T-7", "customer": "globex"})
    assert updated["metadata"]["ticket"] == "T-7"
    assert updated["metadata"]["customer"] == "globex"
    assert updated["metadata"]["graph_id"] == "refund"
    found = agent.threads.search(metadata={"ticket": "T-7"})
    assert [t["thread_id"] for t in found] == [thread_id]
    with server.http("auditor") as auditor:
        entries = auditor.get(f"/threads/{thread_id}/audit").json()["entries"]
        events = auditor.get(f"/threads/{thread_id}/events").json()["events"]
    last = events[-1]
    assert last["type"] == "MetadataUpdated"
    assert last["data"]["metadata"] == {"ticket": "T-7", "customer": "globex"}
    assert last["data"]["actor"]["id"] == "agent"
    assert "set metadata customer, ticket" in entries[-1]["summary"]
    # The same keys again record nothing
    agent.threads.update(thread_id, metadata={"ticket": "T-7"})
    assert server.event_count(thread_id) == len(events)


def test_what_cannot_be_updated_is_refused_and_records_nothing(server):
    agent = server.sdk("agent")
    thread_id = agent.threads.create(metadata={"graph_id": "refund"})["thread_id"]
    reserved = agent.threads.create()["thread_id"]
    before = server.event_count(thread_id)
    with server.http("agent") as http:
        graph = http.patch(f"/threads/{thread_id}", json={"metadata": {"graph_id": "other"}})
        ttl = http.patch(f"/threads/{thread_id}", json={"metadata": {}, "ttl": {"ttl": 5}})
        not_run = http.patch(f"/threads/{reserved}", json={"metadata": {"a": 1}})
        unknown = http.patch("/threads/no-such-thread", json={"metadata": {"a": 1}})
    with server.http("auditor") as http:
        auditor = http.patch(f"/threads/{thread_id}", json={"metadata": {"a": 1}})
    assert (graph.status_code, ttl.status_code) == (422, 422)
    assert "graph_id" in graph.json()["detail"]
    assert (not_run.status_code, unknown.status_code, auditor.status_code) == (409, 404, 403)
    assert server.event_count(thread_id) == before
