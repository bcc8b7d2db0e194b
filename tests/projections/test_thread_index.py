"""The thread index: every thread with its graph, status, times and metadata.

Given runs of real graphs, when the runner catches up, then each thread's
row follows its events (idle, running, interrupted, failed, completed,
cancelled), forks name their source, and threads are found by graph,
status, creation time and metadata, newest first, page by page, or read one
by id. Every test runs on each store kind (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.graph import START as LANGGRAPH_START
from langgraph.graph import StateGraph as LangGraphStateGraph
from langgraph.types import Command as LangGraphCommand

from domain.errors import GraphRecursionError
from domain.graph import END, START, StateGraph
from domain.history.forks import fork_at_version
from domain.history.state_snapshots import load_checkpoint
from domain.types import Command
from langgraph.checkpoint.holdpoint import HoldpointSaver
from projections.decision_register import DecisionRegisterProjection
from projections.runner import ProjectionRunner
from projections.thread_index import STATUSES, ThreadIndex, ThreadIndexProjection
from tests.projections.histories import (
    REVIEWER,
    Out,
    answer,
    approval_graph,
    ask_for,
    checkpoint_before,
    config,
    failing_graph,
    moment,
    parallel_graph,
    pipeline_graph,
)
from tests.saver.langgraph_graphs import Refund, refund_builder


@pytest.fixture
def runner(store):
    runner = ProjectionRunner(store, [ThreadIndexProjection()])
    yield runner
    runner.close()


@pytest.fixture
def index(runner):
    return ThreadIndex(runner.db)


def indexed(runner, index, thread_id):
    """The thread's row, once the runner has caught up."""
    runner.catch_up()
    [row] = [t for t in index.search(limit=1000).items if t.thread_id == thread_id]
    return row


def ids(page):
    return [t.thread_id for t in page.items]


# -- status follows the events ---------------------------------------------


def test_a_thread_whose_node_is_running_is_running(store, runner, index):
    # Given a node that looks at the index while it runs
    seen = []
    graph = pipeline_graph(store, during=lambda: seen.append(indexed(runner, index, "t1").status))

    # When
    graph.invoke({"out": []}, config("t1"))

    # Then
    assert seen == ["running"]


def test_a_thread_paused_for_a_human_is_interrupted(store, runner, index):
    ask_for(approval_graph(store), "t1")

    assert indexed(runner, index, "t1").status == "interrupted"


def test_a_thread_recorded_and_never_run_is_idle(store, runner, index):
    # Given a thread recorded with its graph, as `POST /threads` with a graph_id does
    graph = pipeline_graph(store)
    store.record(graph.start_thread("t1", {"metadata": {}}, REVIEWER))

    assert indexed(runner, index, "t1").status == "idle"


def test_a_thread_that_reached_its_end_is_completed(store, runner, index):
    pipeline_graph(store).invoke({"out": []}, config("t1"))

    assert indexed(runner, index, "t1").status == "completed"


def test_a_thread_whose_interrupt_was_answered_and_that_ran_to_its_end_is_completed(
    store, runner, index
):
    graph = approval_graph(store)
    ask_for(graph, "t1")
    answer(graph, "t1", True)

    assert indexed(runner, index, "t1").status == "completed"


def test_a_thread_is_running_again_once_its_interrupt_is_answered(store, runner, index):
    # Given a second graph whose node reads the index after the human answered
    seen = []
    graph = approval_graph(store)
    ask_for(graph, "t1")

    builder = StateGraph(Out)
    builder.add_node("approve", lambda state: seen.append(indexed(runner, index, "t1").status))
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    watching = builder.compile(checkpointer=store, name="refund")

    # When the answer is given, and the node runs again with it
    watching.invoke(Command(resume=True), config("t1", actor=REVIEWER))

    # Then
    assert seen == ["running"]


def test_a_thread_with_one_of_two_parallel_interrupts_answered_is_still_interrupted(
    store, runner, index
):
    graph = parallel_graph(store)
    left, _right = graph.invoke({"out": []}, config("t1"))["__interrupt__"]

    graph.invoke(Command(resume={left.id: "yes"}), config("t1", actor=REVIEWER))

    assert indexed(runner, index, "t1").status == "interrupted"


def test_a_thread_whose_node_failed_is_failed(store, runner, index):
    with pytest.raises(ValueError, match="ledger"):
        failing_graph(store, [True]).invoke({"out": []}, config("t1"))

    assert indexed(runner, index, "t1").status == "failed"


def test_a_failed_thread_that_is_retried_to_its_end_is_completed(store, runner, index):
    # Given a thread whose node failed once
    broken = [True]
    graph = failing_graph(store, broken)
    with pytest.raises(ValueError, match="ledger"):
        graph.invoke({"out": []}, config("t1"))
    assert indexed(runner, index, "t1").status == "failed"

    # When the node works again and the thread is continued
    broken[0] = False
    graph.invoke(None, config("t1"))

    # Then
    assert indexed(runner, index, "t1").status == "completed"


def test_a_thread_stopped_by_the_recursion_limit_is_failed(store, runner, index):
    builder = StateGraph(Out)
    builder.add_node("loop", lambda state: {"out": ["again"]})
    builder.add_edge(START, "loop")
    builder.add_edge("loop", "loop")
    graph = builder.compile(checkpointer=store, name="loop")

    with pytest.raises(GraphRecursionError):
        graph.invoke({"out": []}, {**config("t1"), "recursion_limit": 3})

    assert indexed(runner, index, "t1").status == "failed"


def test_a_cancelled_thread_is_cancelled(store, runner, index):
    ask_for(approval_graph(store), "t1")

    store.cancel("t1", REVIEWER, "customer withdrew")

    assert indexed(runner, index, "t1").status == "cancelled"


# -- forks -----------------------------------------------------------------


def test_a_fork_records_the_thread_it_was_forked_from(store, runner, index):
    # Given a finished thread
    graph = approval_graph(store, name="refund")
    ask_for(graph, "t1")
    answer(graph, "t1")

    # When it is forked from the checkpoint before its question
    checkpoint = checkpoint_before(graph, "t1", "approve")
    graph.invoke(None, config("t1", checkpoint_id=checkpoint, fork_thread_id="t1-fork"))

    # Then
    fork = indexed(runner, index, "t1-fork")
    assert (fork.forked_from, fork.graph_id) == ("t1", "refund")
    assert indexed(runner, index, "t1").forked_from is None


def test_a_fork_that_asks_anew_is_interrupted_and_its_source_unchanged(store, runner, index):
    graph = approval_graph(store)
    ask_for(graph, "t1")
    answer(graph, "t1")
    checkpoint = checkpoint_before(graph, "t1", "approve")

    graph.invoke(None, config("t1", checkpoint_id=checkpoint, fork_thread_id="t1-fork"))

    assert indexed(runner, index, "t1-fork").status == "interrupted"
    assert indexed(runner, index, "t1").status == "completed"


def test_a_fork_that_runs_to_its_end_is_completed(store, runner, index):
    # Given a finished pipeline, forked from the checkpoint before its last node
    graph = pipeline_graph(store)
    graph.invoke({"out": []}, config("t1"))
    checkpoint = checkpoint_before(graph, "t1", "b")

    # When the fork runs on to END
    graph.invoke(None, config("t1", checkpoint_id=checkpoint, fork_thread_id="t1-fork"))

    # Then it is as finished as its source
    assert store.thread("t1-fork").status == "idle"  # LangGraph's word, for the domain
    assert indexed(runner, index, "t1-fork").status == "completed"


def test_a_fork_starts_as_the_state_it_carried_stood(store, runner, index):
    # Given a finished pipeline
    graph = pipeline_graph(store)
    graph.invoke({"out": []}, config("t1"))
    head = store.thread("t1").version

    # When it is forked at its end, and at the checkpoint before its last node, running
    # nothing
    fork_at_version(store, "t1", head, REVIEWER, new_thread_id="at-end")
    before_b = checkpoint_before(graph, "t1", "b")
    fork_at_version(store, "t1", load_checkpoint(store, "t1", before_b).version, REVIEWER, "mid")

    # Then the fork at the end has nothing left to run, and the other has its last node
    assert indexed(runner, index, "at-end").status == store.thread("at-end").status == "idle"
    assert indexed(runner, index, "mid").status == store.thread("mid").status == "running"


def test_a_copy_of_a_real_langgraph_graphs_finished_thread_is_idle(store, runner, index):
    saver = HoldpointSaver(store, graph_id="refund-lg")
    graph = refund_builder().compile(checkpointer=saver)
    graph.invoke({"amount": 5}, config("lg"))
    graph.invoke(LangGraphCommand(resume=True), config("lg"))

    saver.copy_thread("lg", "lg-copy")

    assert indexed(runner, index, "lg-copy").status == "idle"
    assert indexed(runner, index, "lg").status == "completed"


def test_a_copy_of_a_real_langgraph_graphs_failed_thread_is_failed(store, runner, index):
    def broken(state: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("the refund service is down")

    builder = LangGraphStateGraph(Refund)
    builder.add_node("pay", broken)
    builder.add_edge(LANGGRAPH_START, "pay")
    saver = HoldpointSaver(store, graph_id="broken-lg")
    with pytest.raises(ValueError, match="down"):
        builder.compile(checkpointer=saver).invoke({"amount": 5, "log": []}, config("lg"))

    saver.copy_thread("lg", "lg-copy")

    assert indexed(runner, index, "lg-copy").status == store.thread("lg-copy").status == "failed"


# -- search ----------------------------------------------------------------


@pytest.fixture
def threads(store, runner):
    """Five threads over three graphs and four statuses, with metadata."""
    refunds = approval_graph(store, name="refund")
    refunds.invoke(
        {"amount": 1.0, "decision": None}, config("r-paused", metadata={"customer": "acme"})
    )
    refunds.invoke(
        {"amount": 2.0, "decision": None},
        config("r-done", metadata={"customer": "acme", "tier": 2}),
    )
    answer(refunds, "r-done")
    refunds.invoke(
        {"amount": 3.0, "decision": None}, config("r-stopped", metadata={"customer": "globex"})
    )
    store.cancel("r-stopped", REVIEWER, "stopped")
    pipeline_graph(store).invoke({"out": []}, config("p-done", metadata={"customer": "acme"}))
    with pytest.raises(ValueError, match="ledger"):
        failing_graph(store, [True]).invoke({"out": []}, config("f-failed"))
    runner.catch_up()


def test_threads_are_found_by_graph(threads, index):
    page = index.search(graph_id="refund")

    assert sorted(ids(page)) == ["r-done", "r-paused", "r-stopped"]
    assert page.total == 3


def test_threads_are_found_by_status(threads, index):
    found = {status: sorted(ids(index.search(status=status))) for status in STATUSES}

    assert found == {
        "running": [],
        "interrupted": ["r-paused"],
        "completed": ["p-done", "r-done"],
        "failed": ["f-failed"],
        "cancelled": ["r-stopped"],
        "idle": [],
    }


def test_threads_are_found_by_any_of_several_statuses(threads, index):
    page = index.search(status=("completed", "cancelled"))

    assert sorted(ids(page)) == ["p-done", "r-done", "r-stopped"]
    assert page.total == 3


def test_searching_for_an_unknown_status_is_refused_with_the_known_ones(threads, index):
    with pytest.raises(ValueError, match=r"Unknown status 'done'.*running.*cancelled"):
        index.search(status="done")
    with pytest.raises(ValueError, match=r"Unknown status 'done'"):
        index.search(status=("completed", "done"))


def test_threads_are_found_by_a_metadata_key_and_value(threads, index):
    page = index.search(metadata={"customer": "acme"})

    assert sorted(ids(page)) == ["p-done", "r-done", "r-paused"]


def test_every_metadata_pair_searched_for_must_match(threads, index):
    assert ids(index.search(metadata={"customer": "acme", "tier": "2"})) == ["r-done"]
    assert ids(index.search(metadata={"customer": "globex", "tier": "2"})) == []


def test_a_boolean_metadata_value_is_found_by_its_json_text(store, runner, index):
    pipeline_graph(store).invoke({"out": []}, config("t1", metadata={"vip": True}))
    runner.catch_up()

    assert ids(index.search(metadata={"vip": "true"})) == ["t1"]


def test_threads_are_found_by_creation_time(store, runner, index):
    # Given one thread created before a moment and one after it
    graph = pipeline_graph(store)
    graph.invoke({"out": []}, config("early"))
    boundary = datetime.now(UTC)
    graph.invoke({"out": []}, config("late"))
    runner.catch_up()

    # Then
    assert ids(index.search(created_after=boundary)) == ["late"]
    assert ids(index.search(created_before=boundary)) == ["early"]
    assert ids(index.search(created_after=boundary, created_before=boundary)) == []


@pytest.fixture
def far_from_utc(monkeypatch):
    """The process's local time zone is nine hours ahead of UTC."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_creation_time_without_an_offset_is_utc(store, runner, index, far_from_utc):
    # Given one thread created before a moment and one after it
    graph = pipeline_graph(store)
    graph.invoke({"out": []}, config("early"))
    boundary = datetime.now(UTC)
    graph.invoke({"out": []}, config("late"))
    runner.catch_up()

    # When the moment is given without its offset, on a machine whose local time is not UTC
    naive = boundary.replace(tzinfo=None)

    # Then it is read as UTC, not as the machine's local time
    assert ids(index.search(created_after=naive)) == ["late"]
    assert ids(index.search(created_before=naive)) == ["early"]


def test_time_metadata_and_status_filters_page_together(store, runner, index):
    # Given four acme threads after a moment, one before it and one of another customer
    graph = pipeline_graph(store)
    graph.invoke({"out": []}, config("before", metadata={"customer": "acme"}))
    boundary = datetime.now(UTC)
    for n in range(4):
        graph.invoke({"out": []}, config(f"acme-{n}", metadata={"customer": "acme"}))
    graph.invoke({"out": []}, config("other", metadata={"customer": "globex"}))
    runner.catch_up()
    wanted = {"created_after": boundary, "metadata": {"customer": "acme"}, "status": "completed"}

    # When walked two at a time
    first = index.search(**wanted, limit=2)
    second = index.search(**wanted, limit=2, after=first.next_cursor)

    # Then
    assert (ids(first), ids(second)) == (["acme-3", "acme-2"], ["acme-1", "acme-0"])
    assert (first.total, second.total, second.next_cursor) == (4, 4, None)


def test_threads_are_found_by_who_decided_one_of_their_interrupts(store):
    # Given two refunds answered by two reviewers and one still waiting
    other = {**REVIEWER, "id": "omar"}
    graph = approval_graph(store)
    for thread_id in ("by-rita", "by-omar", "waiting"):
        ask_for(graph, thread_id)
    answer(graph, "by-rita")
    graph.invoke(Command(resume=False), config("by-omar", actor=other))
    runner = ProjectionRunner(store, [ThreadIndexProjection(), DecisionRegisterProjection()])
    try:
        runner.catch_up()
        index = ThreadIndex(runner.db)

        # Then each reviewer finds the thread they decided, and nobody finds none
        assert ids(index.search(decided_by="rita")) == ["by-rita"]
        assert ids(index.search(decided_by="omar", status="completed")) == ["by-omar"]
        assert ids(index.search(decided_by="nobody")) == []
    finally:
        runner.close()


def test_threads_are_found_by_the_time_of_their_last_change(store, runner, index):
    # Given two threads created before a moment, one of them answered after it
    graph = approval_graph(store)
    ask_for(graph, "still")
    ask_for(graph, "answered")
    boundary = datetime.now(UTC)
    answer(graph, "answered")
    runner.catch_up()

    # Then the one answered changed after the moment, the other before it
    assert ids(index.search(updated_after=boundary)) == ["answered"]
    assert ids(index.search(updated_before=boundary)) == ["still"]
    assert ids(index.search(created_before=boundary, updated_after=boundary)) == ["answered"]


def test_a_thread_is_created_when_its_first_event_was_recorded(store, runner, index):
    pipeline_graph(store).invoke({"out": []}, config("t1"))
    started = store.thread_events("t1")[0]

    assert moment(indexed(runner, index, "t1").created_at) == started.timestamp


def test_a_threads_row_carries_its_metadata_and_who_started_it(store, runner, index):
    pipeline_graph(store).invoke(
        {"out": []},
        config("t1", metadata={"customer": "acme"}, actor={"id": "bot-7", "role": "agent"}),
    )

    row = indexed(runner, index, "t1")

    assert row.metadata == {"customer": "acme"}
    assert (row.started_by, row.graph_id) == ("bot-7", "pipeline")


# -- order and paging ------------------------------------------------------


def test_threads_are_listed_newest_first(store, runner, index):
    graph = pipeline_graph(store)
    for n in range(4):
        graph.invoke({"out": []}, config(f"t{n}"))
    runner.catch_up()

    assert ids(index.search()) == ["t3", "t2", "t1", "t0"]


def test_walking_the_pages_visits_every_thread_once_newest_first(store, runner, index):
    # Given seven threads
    graph = pipeline_graph(store)
    for n in range(7):
        graph.invoke({"out": []}, config(f"t{n}"))
    runner.catch_up()

    # When walked three at a time
    walked, after, totals = [], None, set()
    while True:
        page = index.search(limit=3, after=after)
        walked += ids(page)
        totals.add(page.total)
        if page.next_cursor is None:
            break
        after = page.next_cursor

    # Then
    assert walked == [f"t{n}" for n in reversed(range(7))]
    assert totals == {7}


# -- one thread ------------------------------------------------------------


def test_a_thread_is_read_by_its_id_with_its_open_interrupts(store, runner, index):
    # Given a thread paused at two parallel questions, one of them answered
    graph = parallel_graph(store)
    left, _right = graph.invoke({"out": []}, config("t1", metadata={"case": 7}))["__interrupt__"]
    graph.invoke(Command(resume={left.id: "yes"}), config("t1", actor=REVIEWER))
    runner.catch_up()

    # When
    row = index.get("t1")

    # Then
    assert row is not None
    assert (row.thread_id, row.graph_id, row.status) == ("t1", "parallel", "interrupted")
    assert (row.open_interrupts, row.metadata) == (1, {"case": 7})
    assert row.created_at <= row.updated_at


def test_a_cancelled_thread_has_no_open_interrupts(store, runner, index):
    ask_for(approval_graph(store), "t1")
    store.cancel("t1", REVIEWER, "customer withdrew")
    runner.catch_up()

    assert index.get("t1").open_interrupts == 0


def test_a_thread_the_index_does_not_have_is_none(runner, index):
    runner.catch_up()

    assert index.get("nope") is None
