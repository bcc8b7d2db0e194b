"""The auditor's thread search page: each filter (graph, status, created and updated dates,
metadata, decider) narrows the list to exactly the threads it names, the "next page"
link walks every thread once with the filters kept, the search is on record as a read,
and a reviewer is refused it as they are the other auditor pages."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.api.ui.story import decided
from tests.api.ui.ui_client import UiClient

ROW = re.compile(r'data-thread="([^"]+)"')
NEXT = re.compile(r'id="next-page" href="([^"]+)"')


@pytest.fixture
def auditor(server):
    client = UiClient(server.url)
    assert client.sign_in(server.keys["auditor"]).status_code == 303
    yield client
    client.close()


def tagged_thread(server, batch, graph="echo", values=None, **metadata):
    """A thread with the metadata `batch` (and `metadata`), run to its interrupt on
    `graph`: (thread id, interrupt id)."""
    agent = server.sdk("agent")
    thread_id = agent.threads.create(metadata={"batch": batch, **metadata})["thread_id"]
    output = agent.runs.wait(thread_id, graph, input=values or {"payload": {"note": "hi"}})
    return thread_id, output["__interrupt__"][0]["id"]


def listed(client, **params):
    page = client.get("/ui/threads", params=params)
    assert page.status_code == 200, page.text
    return set(ROW.findall(page.text))


def test_each_filter_narrows_the_list_to_exactly_its_threads(server, auditor):
    # Given, in one batch: a globex refund approved by reviewer, a globex refund rejected
    # by reviewer2, an initech refund still waiting, an echo thread waiting
    batch = uuid.uuid4().hex
    approved, first = tagged_thread(
        server, batch, "refund", {"refund_amount": 300.0}, customer="globex"
    )
    rejected, second = tagged_thread(
        server, batch, "refund", {"refund_amount": 310.0}, customer="globex"
    )
    waiting, _ = tagged_thread(
        server, batch, "refund", {"refund_amount": 320.0}, customer="initech"
    )
    echo, _ = tagged_thread(server, batch, "echo", {"payload": {"note": "hi"}})
    decided(server, first, "approve", who="reviewer")
    decided(server, second, "reject", who="reviewer2")
    everything = {approved, rejected, waiting, echo}
    mine = f"batch={batch}"
    today = datetime.now(UTC).date()

    # When the auditor searches with each filter, then only its threads are listed
    assert listed(auditor, metadata=mine) == everything
    assert listed(auditor, metadata=f"{mine},customer=globex") == {approved, rejected}
    assert listed(auditor, metadata=mine, graph_id="echo") == {echo}
    assert listed(auditor, metadata=mine, status="interrupted") == {waiting, echo}
    assert listed(auditor, metadata=mine, status="completed") == {approved, rejected}
    assert listed(auditor, metadata=mine, decider="reviewer2") == {rejected}
    assert listed(auditor, metadata=mine, decider="reviewer") == {approved}
    assert listed(auditor, metadata=mine, decider="nobody") == set()
    assert listed(auditor, metadata=mine, created_from=str(today)) == everything
    assert listed(auditor, metadata=mine, created_to=str(today - timedelta(days=1))) == set()
    assert listed(auditor, metadata=mine, updated_from=str(today + timedelta(days=1))) == set()
    assert listed(auditor, metadata=mine, updated_to=str(today)) == everything
    # And each row links to its thread's page
    page = auditor.get("/ui/threads", params={"metadata": mine, "graph_id": "echo"}).text
    assert f'href="/ui/threads/{echo}"' in page
    assert "<strong>1</strong> thread matching" in page


def test_next_page_walks_every_thread_once_keeping_the_filters(server, auditor):
    # Given 30 threads of one batch (more than a page of 25), and others outside it
    batch = uuid.uuid4().hex
    made = {tagged_thread(server, batch)[0] for _ in range(30)}
    tagged_thread(server, uuid.uuid4().hex)

    # When the auditor searches the batch and follows "Next page" to the end
    seen: list[str] = []
    pages = 0
    url = f"/ui/threads?metadata=batch%3D{batch}&status=interrupted"
    while url:
        page = auditor.get(url)
        assert page.status_code == 200, page.text
        pages += 1
        seen += ROW.findall(page.text)
        found = NEXT.search(page.text)
        url = unescape(found.group(1)) if found else None
        if url:  # the next page's link keeps the filters
            assert f"metadata=batch%3D{batch}" in url
            assert "status=interrupted" in url

    # Then every thread of the batch was listed exactly once, over two pages
    assert pages == 2
    assert len(seen) == len(set(seen)) == 30
    assert set(seen) == made


def test_every_filter_at_once_pages_through_its_threads_each_page_keeping_them_all(server, auditor):
    # Given five refunds for globex that reviewer2 decided, in one batch; and beside them a
    # refund reviewer decided, one still waiting, one for initech and an echo thread
    batch = uuid.uuid4().hex
    wanted = set()
    for n in range(5):
        thread_id, interrupt_id = tagged_thread(
            server, batch, "refund", {"refund_amount": 200.0 + n}, customer="globex"
        )
        decided(server, interrupt_id, "approve" if n % 2 else "reject", who="reviewer2")
        wanted.add(thread_id)
    other_decider = tagged_thread(
        server, batch, "refund", {"refund_amount": 250.0}, customer="globex"
    )
    decided(server, other_decider[1], "approve", who="reviewer")
    tagged_thread(server, batch, "refund", {"refund_amount": 260.0}, customer="globex")
    initech = tagged_thread(server, batch, "refund", {"refund_amount": 270.0}, customer="initech")
    decided(server, initech[1], "approve", who="reviewer2")
    tagged_thread(server, batch, "echo", customer="globex")
    today = str(datetime.now(UTC).date())
    filters = {
        "graph_id": "refund",
        "status": "completed",
        "created_from": today,
        "created_to": today,
        "updated_from": today,
        "updated_to": today,
        "metadata": f"batch={batch},customer=globex",
        "decider": "reviewer2",
        "limit": "2",
    }

    # When the auditor searches with every filter, two a page, and follows "Next page"
    seen: list[str] = []
    queries = []
    url: str | None = "/ui/threads?" + urlencode(filters)
    while url:
        page = auditor.get(url)
        assert page.status_code == 200, page.text
        queries.append(parse_qs(urlsplit(url).query))
        assert "<strong>5</strong> threads matching" in page.text
        seen += ROW.findall(page.text)
        found = NEXT.search(page.text)
        url = unescape(found.group(1)) if found else None

    # Then the five are listed once each, over three pages
    assert len(seen) == len(set(seen)) == 5
    assert set(seen) == wanted
    assert len(queries) == 3
    # And every page's URL kept every filter and the page size
    for query in queries:
        assert {name: query[name] for name in filters} == {k: [v] for k, v in filters.items()}


def test_a_search_is_on_record_as_the_auditors_read(server, auditor):
    query = {"graph_id": "echo", "status": "completed"}
    assert auditor.get("/ui/threads", params=query).status_code == 200
    with server.http("auditor") as api:
        data = api.get("/audit/reads", params={"actor": "auditor", "limit": 1000}).json()["data"]
    targets = [(r["kind"], r["target"], r["via"]) for r in data]
    assert ("report", "threads?graph_id=echo&status=completed", "ui") in targets


def test_a_filter_that_cannot_be_read_is_refused_clearly(server, auditor):
    bad_metadata = auditor.get("/ui/threads", params={"metadata": "customer"})
    bad_date = auditor.get("/ui/threads", params={"created_from": "yesterday"})
    bad_status = auditor.get("/ui/threads", params={"status": "busy"})
    bad_limit = auditor.get("/ui/threads", params={"limit": "0"})

    assert bad_metadata.status_code == bad_date.status_code == bad_status.status_code == 422
    assert bad_limit.status_code == 422
    assert "Invalid limit '0': a whole number from 1 to 100" in unescape(bad_limit.text)
    assert "write key=value (e.g. customer=globex)" in unescape(bad_metadata.text)
    assert "'yesterday' is not a date like 2026-03-01" in unescape(bad_date.text)
    assert "Invalid status 'busy'" in unescape(bad_status.text)


def test_a_reviewer_is_refused_the_search_as_the_other_auditor_pages(server):
    # Given a signed-in reviewer (who may read threads, not audit)
    reviewer = UiClient(server.url)
    try:
        assert reviewer.sign_in(server.keys["reviewer"]).status_code == 303
        with server.http("auditor") as api:
            before = len(api.get("/audit/refusals", params={"limit": 1000}).json()["data"])

        # When they open the thread search and the dashboard
        search = reviewer.get("/ui/threads")
        dashboard = reviewer.get("/ui/dashboard")
        inbox = reviewer.get("/ui/inbox")
    finally:
        reviewer.close()

    # Then both are the same 403 page, both refusals are on record, and no link leads there
    assert search.status_code == dashboard.status_code == 403
    assert search.text.replace("/ui/threads", "/ui/dashboard") == dashboard.text
    assert 'data-thread="' not in search.text
    with server.http("auditor") as api:
        refused = api.get("/audit/refusals", params={"limit": 1000}).json()["data"][before:]
    assert [(r["reason"], r["principal_id"]) for r in refused] == [
        ("wrong_role", "reviewer"),
        ("wrong_role", "reviewer"),
    ]
    assert 'href="/ui/threads"' not in inbox.text


def test_auditors_find_the_search_in_the_navigation(server, auditor):
    page = auditor.get("/ui/dashboard")
    assert '<li><a href="/ui/threads">Threads</a></li>' in page.text
