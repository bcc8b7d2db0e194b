"""The inbox's read model: each open interrupt's title and bulk option, and text search.

Given real graphs run on the store, when the runner catches up, then each row has the
title its `interrupt(..., title=...)` declared, made from its payload, and says whether
it may be decided in bulk; a search finds open interrupts by words (or the start of
words) of their thread id, their thread's metadata and their payload, through the
search's word table, and forgets them once they are answered. Every test runs on each
store kind (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

import pytest

from domain.graph import END, START, CompiledStateGraph, StateGraph
from domain.record.application import Workflows
from domain.types import interrupt
from projections.pending_approvals import PendingApprovals, PendingApprovalsProjection
from projections.pending_search import TERMS
from projections.runner import ProjectionRunner
from tests.projections.histories import REVIEWER, answer, approval_graph, ask_for, config


class Draft(TypedDict):
    content: str
    customer: dict[str, Any]
    approval: Any


def review_graph(store: Workflows, **options: Any) -> CompiledStateGraph:
    """START -> review -> END; `review` asks about the draft, with `options`."""

    def review(state: Draft) -> dict[str, Any]:
        payload = {"content": state["content"], "customer": state["customer"]}
        return {"approval": interrupt(payload, **options)}

    builder = StateGraph(Draft)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=store, name="content_review")


def draft(
    graph: CompiledStateGraph, thread_id: str, content: str, metadata: dict[str, Any] | None = None
) -> None:
    state = {"content": content, "customer": {"name": "Acme Ltd"}, "approval": None}
    graph.invoke(state, config(thread_id, metadata=metadata or {}))


@pytest.fixture
def runner(store):
    runner = ProjectionRunner(store, [PendingApprovalsProjection()])
    yield runner
    runner.close()


@pytest.fixture
def queue(runner):
    return PendingApprovals(runner.db)


def found(runner, queue, search: str) -> list[str]:
    runner.catch_up()
    return [item.thread_id for item in queue.page(search=search, limit=100).items]


# -- titles and bulk ---------------------------------------------------------


def test_a_row_has_the_title_its_interrupt_declared_made_from_its_payload(store, runner, queue):
    # Given an interrupt titled by a template of a field and a nested field
    graph = review_graph(store, title="Publish for {customer.name}? {content}", bulk=True)
    draft(graph, "t1", "Draft:   spring\nsale")

    # When
    runner.catch_up()

    # Then the title is the template filled in, on one line; the row may go in bulk
    [row] = queue.page().items
    assert row.title == "Publish for Acme Ltd? Draft: spring sale"
    assert row.bulk is True


def test_a_row_without_a_declared_title_has_none_and_is_decided_one_at_a_time(store, runner, queue):
    # Given an interrupt that declares neither a title nor bulk
    ask_for(approval_graph(store), "t1", 80.0)

    # When
    runner.catch_up()

    # Then
    [row] = queue.page().items
    assert (row.title, row.bulk) == (None, False)


# -- search ------------------------------------------------------------------


def test_a_search_finds_open_interrupts_by_thread_id_metadata_and_payload(store, runner, queue):
    # Given three drafts with different words, customers and thread ids
    graph = review_graph(store, title="{content}")
    draft(graph, "order-7731", "Spring sale banner", {"customer": "Globex"})
    draft(graph, "order-8120", "Winter clearance email", {"customer": "Initech"})
    draft(graph, "refund-0042", "Apology letter", {"region": "north"})

    # Then each is found by a word of its thread id, its metadata or its payload
    assert found(runner, queue, "order") == ["order-7731", "order-8120"]
    assert found(runner, queue, "refund-0042") == ["refund-0042"]
    assert found(runner, queue, "globex") == ["order-7731"]
    assert found(runner, queue, "NORTH") == ["refund-0042"]
    assert found(runner, queue, "clearance") == ["order-8120"]
    # By the start of a word, and only where every word matches
    assert found(runner, queue, "wint") == ["order-8120"]
    assert found(runner, queue, "order banner") == ["order-7731"]
    assert found(runner, queue, "spring initech") == []
    # The payload's keys and nested values count too
    assert found(runner, queue, "acme") == ["order-7731", "order-8120", "refund-0042"]


def test_a_search_counts_only_what_it_finds(store, runner, queue):
    # Given
    graph = review_graph(store)
    for number in range(3):
        draft(graph, f"t{number}", f"draft number {number}")
    runner.catch_up()

    # When
    page = queue.page(search="draft", limit=2)

    # Then the total is of the matches, over pages
    assert page.total == 3
    assert len(page.items) == 2
    assert queue.page(search="number 1").total == 1


def test_a_search_finds_a_thread_by_metadata_given_after_it_started(store, runner, queue):
    # Given a paused thread, then metadata recorded for it
    draft(review_graph(store), "t1", "Plain text")
    store.update_metadata("t1", {"ticket": "ZD-5512"}, REVIEWER)

    # Then
    assert found(runner, queue, "zd 5512") == ["t1"]


def test_an_answered_interrupt_is_no_longer_found_and_leaves_no_words(store, runner, queue):
    # Given a paused refund, found by its payload
    graph = approval_graph(store)
    ask_for(graph, "t1", 250.0)
    assert found(runner, queue, "refund 250") == ["t1"]

    # When it is answered
    answer(graph, "t1")

    # Then it is not found, and only its thread's own words are left
    assert found(runner, queue, "refund") == []
    with runner.db.transaction(write=False) as cursor:
        cursor.execute(f"SELECT DISTINCT interrupt_id FROM {runner.db.table(TERMS)}")
        assert cursor.fetchall() == [("",)]


def test_a_search_reads_the_word_table_by_its_index_not_the_text(store, runner, queue):
    # Given a queue of drafts
    draft(review_graph(store), "t1", "Spring sale")
    runner.catch_up()
    db = runner.db
    terms_table = db.table(TERMS)
    condition = f"term >= 'spr' AND term < 'spr{chr(0x10FFFF)}'"

    # When the database plans a search's look-up of a word (PostgreSQL told to use an
    # index where it can: on a table this small it would read it whole)
    with db.transaction(write=False) as cursor:
        if db.dialect == "postgres":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN SELECT interrupt_id FROM {terms_table} WHERE {condition}")
        else:
            cursor.execute(
                f"EXPLAIN QUERY PLAN SELECT interrupt_id FROM {terms_table} WHERE {condition}"
            )
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())

    # Then it reads a range of the word table's key
    by_key = r"Index (Only )?Scan (using|on) \w*pkey|SEARCH \w+ USING \w* ?INDEX"
    assert re.search(by_key, plan), plan
