"""`POST /threads/search` by creation time, Holdpoint's extension of LangGraph's body,
on SQLite and PostgreSQL.

The server is shared by the module's tests: each marks its threads with a
metadata tag of its own and searches by it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from tests.api.http_harness import Server, server_on
from tests.projections.histories import config, pipeline_graph


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
        yield running


def searcher(server: Server, tag: str) -> Any:
    """`found(**body)`: the ids of the threads tagged `tag` that the search returns."""

    def found(**body: Any) -> list[str]:
        with server.http("agent") as agent:
            answer = agent.post("/threads/search", json={"metadata": {"tag": tag}, **body})
        assert answer.status_code == 200, answer.text
        return [thread["thread_id"] for thread in answer.json()]

    return found


def test_threads_are_searched_by_creation_time(server):
    # Given a thread recorded before a moment, and one recorded and one reserved after it
    agent, tag = server.sdk("agent"), uuid4().hex
    early = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    boundary = datetime.now(UTC).isoformat()
    late = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    reserved = agent.threads.create(metadata={"tag": tag})["thread_id"]  # no graph yet
    found = searcher(server, tag)

    # Then created_after includes the moment, created_before excludes it
    assert sorted(found(created_after=boundary)) == sorted([late, reserved])
    assert found(created_before=boundary) == [early]
    assert found(created_after=boundary, created_before=boundary) == []
    assert found(ids=[early, late], created_after=boundary) == [late]
    # And a time without an offset is UTC
    assert found(created_before=boundary.removesuffix("+00:00")) == [early]


def test_an_idle_search_finds_threads_never_run_and_threads_run_to_their_end(server):
    # Given a thread recorded and never run, and one that ran to its end
    tag = uuid4().hex
    new = server.sdk("agent").threads.create(metadata={"tag": tag, "graph_id": "refund"})
    pipeline_graph(server.store).invoke({"out": []}, config("ran-" + tag, metadata={"tag": tag}))

    # Then LangGraph's idle is both
    assert sorted(searcher(server, tag)(status="idle")) == sorted([new["thread_id"], "ran-" + tag])


def test_a_creation_time_that_is_not_iso_8601_is_refused_with_422(server):
    with server.http("agent") as agent:
        answer = agent.post("/threads/search", json={"created_after": "yesterday"})

    assert answer.status_code == 422
    assert "created_after" in answer.text


def test_the_openapi_document_describes_the_creation_time_range(server):
    with server.http() as anonymous:
        schemas = anonymous.get("/openapi.json").json()["components"]["schemas"]

    fields = schemas["ThreadSearch"]["properties"]
    for name in ("created_after", "created_before"):
        assert {"type": "string", "format": "date-time"} in fields[name]["anyOf"]
        assert fields[name]["description"].startswith("Holdpoint extension: only threads created")


def test_threads_are_sorted_as_asked_with_threads_not_run_yet_in_their_place(server):
    # Given three threads created one after another: a reserved one between two recorded
    agent, tag = server.sdk("agent"), uuid4().hex
    first = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    reserved = agent.threads.create(metadata={"tag": tag})["thread_id"]
    last = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    # And the first one updated last: it runs to its interrupt
    agent.runs.wait(first, "refund", input={"refund_amount": 500.0})
    found = searcher(server, tag)

    # Then the default is newest first, and each sort key and order is honoured
    assert found() == [last, reserved, first]
    assert found(sort_by="created_at", sort_order="asc") == [first, reserved, last]
    assert found(sort_by="updated_at") == [first, last, reserved]
    assert found(sort_by="state_updated_at") == [first, last, reserved]
    assert found(sort_by="thread_id", sort_order="asc") == sorted([first, reserved, last])
    # Status in the API's names: idle (the two never run) before interrupted
    by_status = found(sort_by="status", sort_order="asc")
    assert by_status[-1] == first
    assert sorted(by_status[:2]) == sorted([reserved, last])
    # And pages follow the order
    assert found(sort_by="updated_at", limit=1, offset=1) == [last]


def test_select_answers_with_the_fields_asked_for(server):
    agent, tag = server.sdk("agent"), uuid4().hex
    thread_id = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    picked = agent.threads.search(metadata={"tag": tag}, select=["thread_id", "status"])
    assert picked == [{"thread_id": thread_id, "status": "idle"}]
    with server.http("agent") as http:
        unknown = http.post("/threads/search", json={"select": ["secrets"]})
        bad_sort = http.post("/threads/search", json={"sort_by": "name"})
    assert unknown.status_code == 422
    assert bad_sort.status_code == 422


def test_threads_are_counted_with_the_searchs_filters(server):
    agent, tag = server.sdk("agent"), uuid4().hex
    ran = agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})["thread_id"]
    agent.runs.wait(ran, "refund", input={"refund_amount": 500.0})
    agent.threads.create(metadata={"tag": tag, "graph_id": "refund"})
    agent.threads.create(metadata={"tag": tag})  # reserved: not run yet
    assert agent.threads.count(metadata={"tag": tag}) == 3
    assert agent.threads.count(metadata={"tag": tag}, status="interrupted") == 1
    assert agent.threads.count(metadata={"tag": tag}, status="idle") == 2
    assert agent.threads.count(metadata={"tag": tag, "graph_id": "refund"}) == 2
    assert agent.threads.count(metadata={"tag": tag}, values={"refund_amount": 500.0}) == 1


def test_a_thread_recorded_while_still_reserved_is_found_once(server):
    # Given a thread whose run has begun while its reservation is not dropped yet (the
    # moment between the run's first commit and the drop, maybe in another process)
    tag = uuid4().hex
    thread_id = "ran-" + tag
    pipeline_graph(server.store).invoke({"out": []}, config(thread_id, metadata={"tag": tag}))
    server.services.reservations.add(thread_id, {"tag": tag}, "amy")

    # Then a search lists it once, as recorded
    with server.http("agent") as agent:
        answer = agent.post("/threads/search", json={"metadata": {"tag": tag}}).json()
        counted = agent.post("/threads/count", json={"metadata": {"tag": tag}}).json()
    assert [(t["thread_id"], t["status"]) for t in answer] == [(thread_id, "idle")]
    assert counted == 1
