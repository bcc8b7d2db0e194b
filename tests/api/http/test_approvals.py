"""The approval queue over HTTP: `GET /approvals` filtered by node, role, age
and deadline, paged with `cursor` / `next_cursor`; and the oversight writes
documented with their 503. On SQLite and PostgreSQL.

Each test looks only at the interrupts it raised (other tests share the
server), and checks that a filter keeps what it should and leaves out what it
should.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict
from uuid import uuid4

import pytest

from domain.types import interrupt
from tests.api.http_harness import server_on
from tests.graphs import linear_graph


class Quick(TypedDict):
    answer: Any


def decide_soon(state: Quick) -> dict[str, Any]:
    return {"answer": interrupt("Answer within 50 ms", deadline=0.05)}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    # The deadline worker is held back: it would expire an overdue interrupt (and so
    # take it off the queue) within a poll, before the test could read it as overdue.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("projections.deadlines.DeadlineWorker.__call__", lambda _self: [])
        with server_on(request.param, tmp_path_factory.mktemp("store")) as running:
            yield running


def raised(server, graph: str, values: dict[str, Any]) -> str:
    """Start a thread of `graph` as the agent; the id of the interrupt it paused at."""
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    return sdk.runs.wait(thread_id, graph, input=values)["__interrupt__"][0]["id"]


def queue(server, **params: Any) -> dict[str, Any]:
    with server.http("reviewer") as reviewer:
        response = reviewer.get("/approvals", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def ids(page: dict[str, Any]) -> list[str]:
    return [row["interrupt_id"] for row in page["data"]]


def until_listed(server, interrupt_id: str, **params: Any) -> dict[str, Any]:
    """The queue read with `params` until it lists `interrupt_id` (at most 10 s)."""
    deadline = time.monotonic() + 10
    while interrupt_id not in ids(page := queue(server, **params)):
        assert time.monotonic() < deadline, f"{interrupt_id} never listed with {params}"
    return page


def test_node_filter_keeps_only_the_interrupts_raised_at_that_node(server):
    # Given an interrupt raised at node `ask` and one at node `approve_payment`
    asked = raised(server, "echo", {"payload": "node filter"})
    payment = raised(server, "guarded", {"amount": 1.5})

    # When the queue is read by node
    at_ask = ids(queue(server, node="ask"))
    at_payment = ids(queue(server, node="approve_payment"))

    # Then each reading has its node's interrupt and not the other's
    assert asked in at_ask
    assert payment not in at_ask
    assert payment in at_payment
    assert asked not in at_payment


def test_role_filter_keeps_only_the_interrupts_that_require_that_role(server):
    # Given an interrupt that requires an admin and one that requires no particular role
    payment = raised(server, "guarded", {"amount": 2.5})
    asked = raised(server, "echo", {"payload": "role filter"})

    # When the queue is read for admins
    page = queue(server, role="admin")

    # Then it has the admin's interrupt only, each row naming the role
    assert payment in ids(page)
    assert asked not in ids(page)
    assert {row["required_role"] for row in page["data"]} == {"admin"}


def test_overdue_keeps_only_the_interrupts_past_their_deadline(server):
    # Given an interrupt with a 50 ms deadline, raised by a Python caller on the server's
    # store, and one with no deadline
    graph = linear_graph(server.store, Quick, decide_soon, name="deadlined")
    paused = graph.invoke({"answer": None}, {"configurable": {"thread_id": str(uuid4())}})
    [quick] = paused["__interrupt__"]
    asked = raised(server, "echo", {"payload": "overdue filter"})
    due = queue(server)
    (due_by,) = [row["due_by"] for row in due["data"] if row["interrupt_id"] == quick.id]
    assert due_by is not None

    # When the deadline has passed and the overdue interrupts are read
    page = until_listed(server, quick.id, overdue="true")

    # Then the one past its deadline is there, the other is not
    assert quick.id in ids(page)
    assert asked not in ids(page)
    assert all(row["due_by"] is not None for row in page["data"])


def test_min_age_keeps_only_the_interrupts_raised_long_enough_ago(server):
    # Given an interrupt raised half a second before another
    older = raised(server, "echo", {"payload": "older"})
    time.sleep(0.5)
    newer = raised(server, "echo", {"payload": "newer"})
    ages = {row["interrupt_id"]: row["age_seconds"] for row in queue(server, node="ask")["data"]}
    assert ages[older] - ages[newer] >= 0.5

    # When the queue is read for interrupts at least as old as the older one was just now
    page = queue(server, min_age_seconds=ages[older])

    # Then the older one is there and the newer one is not
    assert older in ids(page)
    assert newer not in ids(page)
    assert all(row["age_seconds"] >= ages[older] for row in page["data"])


def test_a_cursor_pages_through_the_queue_oldest_first_without_gaps_or_repeats(server):
    # Given three more interrupts at node `ask`
    mine = [raised(server, "echo", {"payload": f"page {n}"}) for n in range(3)]
    everything = queue(server, graph_id="echo", node="ask")
    assert ids(everything)[-3:] == mine

    # When the same queue is read two rows at a time, following `next_cursor`
    pages = [queue(server, graph_id="echo", node="ask", limit=2)]
    while pages[-1]["next_cursor"] is not None:
        assert len(pages) < len(ids(everything)), "the cursor does not move on"
        cursor = pages[-1]["next_cursor"]
        pages.append(queue(server, graph_id="echo", node="ask", limit=2, cursor=cursor))

    # Then the pages hold the whole queue in order, each at most two rows and with the
    # full count, and the last page has no cursor
    assert [row for page in pages for row in ids(page)] == ids(everything)
    assert all(1 <= len(page["data"]) <= 2 for page in pages)
    assert {page["count"] for page in pages} == {everything["count"]}
    assert len(pages) == (len(ids(everything)) + 1) // 2


WRITES = [
    ("post", "/approvals/{interrupt_id}/decision"),
    ("post", "/threads/{thread_id}/cancel"),
    ("post", "/threads"),
    ("post", "/threads/{thread_id}/state"),
    ("post", "/threads/{thread_id}/runs"),
    ("post", "/threads/{thread_id}/runs/wait"),
    ("post", "/threads/{thread_id}/runs/stream"),
    ("post", "/runs"),
    ("post", "/runs/wait"),
    ("post", "/runs/stream"),
]


def test_an_interrupt_assigned_to_a_reviewer_shows_and_filters_in_the_queue(server):
    # Given two open interrupts
    mine, other = (raised(server, "echo", {"payload": f"assign {n}"}) for n in range(2))

    # When a reviewer assigns the first to reviewer2, and the second to itself then to no one
    with server.http("reviewer") as reviewer:
        assigned = reviewer.post(f"/approvals/{mine}/assign", json={"reviewer_id": "reviewer2"})
        reviewer.post(f"/approvals/{other}/assign", json={"reviewer_id": "reviewer"})
        cleared = reviewer.post(f"/approvals/{other}/assign", json={"reviewer_id": None})

    # Then the queue shows it, filters on it, and the thread's audit names who assigned it
    assert assigned.status_code == cleared.status_code == 200, assigned.text
    assert assigned.json()["assigned_by"] == {"id": "reviewer", "role": "reviewer"}
    rows = {row["interrupt_id"]: row for row in queue(server)["data"]}
    assert (rows[mine]["assigned_to"], rows[other]["assigned_to"]) == ("reviewer2", None)
    assert mine in ids(queue(server, assigned_to="reviewer2"))
    assert other not in ids(queue(server, assigned_to="reviewer2"))
    with server.http("auditor") as auditor:
        audit = auditor.get(f"/threads/{rows[mine]['thread_id']}/audit").json()
    assert f"reviewer assigned {mine} to reviewer2" in [e["summary"] for e in audit["entries"]]


@pytest.mark.parametrize(
    ("who", "body", "status", "detail"),
    [
        ("agent", {"reviewer_id": "reviewer"}, 403, "may not decide"),
        ("reviewer", {"reviewer_id": "agent"}, 422, "holds no active key of a role that may"),
        ("reviewer", {"reviewer_id": "nobody"}, 422, "holds no active key of a role that may"),
        ("reviewer", {"reviewer": "reviewer2"}, 422, "reviewer_id"),
    ],
)
def test_a_bad_assignment_is_refused_and_records_nothing(server, who, body, status, detail):
    # Given
    interrupt_id = raised(server, "echo", {"payload": "bad assignment"})
    [thread_id] = [
        r["thread_id"] for r in queue(server)["data"] if r["interrupt_id"] == interrupt_id
    ]
    events = server.event_count(thread_id)

    # When
    with server.http(who) as client:
        response = client.post(f"/approvals/{interrupt_id}/assign", json=body)

    # Then
    assert response.status_code == status, response.text
    assert detail in response.json()["detail"]
    assert server.event_count(thread_id) == events


def test_an_interrupt_no_longer_open_cannot_be_assigned(server):
    # Given an interrupt a reviewer answered
    sdk = server.sdk("agent")
    thread_id = sdk.threads.create()["thread_id"]
    interrupt_id = sdk.runs.wait(thread_id, "echo", input={"payload": "done"})["__interrupt__"][0][
        "id"
    ]
    server.sdk("reviewer").runs.wait(thread_id, "echo", command={"resume": "ok"})

    # When
    with server.http("reviewer") as reviewer:
        response = reviewer.post(f"/approvals/{interrupt_id}/assign", json={"reviewer_id": None})

    # Then
    assert response.status_code == 409, response.text
    assert "has no pending interrupt" in response.json()["detail"]


def test_the_endpoints_that_write_document_their_503_when_the_store_is_down(server):
    # Given the OpenAPI document
    with server.http() as anonymous:
        paths = anonymous.get("/openapi.json").json()["paths"]

    # Then each endpoint that writes to the store lists 503 as a problem
    for method, path in WRITES:
        responses = paths[path][method]["responses"]
        assert "503" in responses, f"{method} {path}"
        schema = responses["503"]["content"]["application/problem+json"]["schema"]
        assert schema["$ref"].endswith("/ProblemDetail")
