"""The pending-approval queue: one row per open interrupt, read by reviewers.

Given runs of real graphs on the store, when the runner catches up, then the
queue holds exactly the interrupts that wait for a human, with what the
human is shown, and reads them filtered and page by page in a stable order.
Every test runs on each store kind (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import UnknownInterruptError
from domain.record.thread import WorkflowThread
from domain.types import Command
from projections.catalog import runner_for
from projections.pending_approvals import PendingApprovals, PendingApprovalsProjection
from projections.runner import ProjectionRunner
from tests.projections.histories import (
    REVIEWER,
    answer,
    approval_graph,
    ask_for,
    checkpoint_before,
    config,
    moment,
    parallel_graph,
    read_models,
    record_history,
    two_questions_graph,
)


@pytest.fixture
def runner(store):
    runner = ProjectionRunner(store, [PendingApprovalsProjection()])
    yield runner
    runner.close()


@pytest.fixture
def queue(runner):
    return PendingApprovals(runner.db)


def caught_up(runner, queue, **filters):
    runner.catch_up()
    return queue.page(**filters)


def walk(queue, limit, between_pages=None, **filters):
    """Every interrupt id met walking the queue `limit` rows at a time."""
    seen, after, pages = [], None, 0
    while True:
        page = queue.page(limit=limit, after=after, **filters)
        seen += [item.interrupt_id for item in page.items]
        pages += 1
        if page.next_cursor is None:
            return seen
        if between_pages is not None:
            between_pages(pages)
        after = page.next_cursor


# -- what a row holds ------------------------------------------------------


def test_an_open_interrupt_is_one_row_with_its_thread_graph_node_and_payload(store, runner, queue):
    # Given a refund thread paused for approval
    pending = ask_for(approval_graph(store, name="refund", node="approve"), "t1", 250.0)

    # When
    page = caught_up(runner, queue)

    # Then
    [row] = page.items
    assert (row.interrupt_id, row.thread_id, row.graph_id, row.node) == (
        pending.id,
        "t1",
        "refund",
        "approve",
    )
    assert row.payload == {"question": "Refund €250.0?", "amount": 250.0}
    assert page.total == 1


def test_a_row_is_raised_at_the_moment_the_interrupt_was_recorded(store, runner, queue):
    # Given
    ask_for(approval_graph(store), "t1")
    [raised] = [
        e for e in store.thread_events("t1") if isinstance(e, WorkflowThread.InterruptRaised)
    ]

    # When
    [row] = caught_up(runner, queue).items

    # Then
    assert moment(row.raised_at) == raised.timestamp


def test_a_row_carries_the_role_its_interrupt_requires(store, runner, queue):
    # Given interrupt(value, required_role="finance")
    ask_for(approval_graph(store, role="finance"), "t1")

    # When
    [row] = caught_up(runner, queue).items

    # Then
    assert row.required_role == "finance"


# -- when rows come and go -------------------------------------------------


def test_a_parallel_step_that_pauses_twice_gives_one_row_per_node(store, runner, queue):
    # Given left and right both ask in one superstep
    result = parallel_graph(store).invoke({"out": []}, config("t1"))

    # When
    page = caught_up(runner, queue)

    # Then
    assert sorted((row.interrupt_id, row.node, row.payload) for row in page.items) == sorted(
        (i.id, i.value.removeprefix("ask "), i.value) for i in result["__interrupt__"]
    )


def test_a_resumed_interrupt_leaves_the_queue(store, runner, queue):
    # Given
    graph = approval_graph(store)
    ask_for(graph, "t1")
    caught_up(runner, queue)

    # When
    answer(graph, "t1", True)

    # Then
    page = caught_up(runner, queue)
    assert (page.items, page.total) == ([], 0)


def test_a_queue_emptied_batch_by_batch_has_the_rows_of_a_rebuild(store, runner, queue):
    # Given an interrupt raised in one batch and answered in the next
    graph = approval_graph(store)
    ask_for(graph, "t1")
    caught_up(runner, queue)
    answer(graph, "t1", True)
    runner.catch_up()
    applied = read_models(runner.db, ("pending_approvals",))

    # When the queue is rebuilt from zero (both events in one batch)
    runner.rebuild()

    # Then its tables hold the same rows: no count left behind at zero
    assert read_models(runner.db, ("pending_approvals",)) == applied
    assert applied["holdpoint_pending_counts"] == []


def test_resuming_one_of_two_parallel_interrupts_leaves_the_other(store, runner, queue):
    # Given
    graph = parallel_graph(store)
    left, right = graph.invoke({"out": []}, config("t1"))["__interrupt__"]

    # When only the left one is answered
    graph.invoke(Command(resume={left.id: "yes"}), config("t1", actor=REVIEWER))

    # Then
    page = caught_up(runner, queue)
    assert [row.interrupt_id for row in page.items] == [right.id]


def test_cancelling_a_thread_removes_its_interrupts_and_no_others(store, runner, queue):
    # Given a parallel thread with two open interrupts, and another thread
    parallel_graph(store).invoke({"out": []}, config("doomed"))
    kept = ask_for(approval_graph(store), "kept")
    caught_up(runner, queue)

    # When
    store.cancel("doomed", REVIEWER, "wrong customer")

    # Then
    page = caught_up(runner, queue)
    assert [row.interrupt_id for row in page.items] == [kept.id]


def test_a_node_that_asks_again_after_an_answer_has_only_its_new_question_open(
    store, runner, queue
):
    # Given a node that asks "first?" and then "second?"
    graph = two_questions_graph(store)
    graph.invoke({"out": []}, config("t1"))

    # When "first?" is answered
    graph.invoke(Command(resume="a"), config("t1", actor=REVIEWER))

    # Then
    [row] = caught_up(runner, queue).items
    assert (row.node, row.payload) == ("two", "second?")


def test_a_fork_that_asks_anew_has_its_own_row_on_the_fork(store, runner, queue):
    # Given a finished thread, forked from the checkpoint before its question
    graph = approval_graph(store, name="refund")
    ask_for(graph, "t1")
    answer(graph, "t1", True)
    checkpoint = checkpoint_before(graph, "t1", "approve")

    # When the fork runs and asks again
    graph.invoke(None, config("t1", checkpoint_id=checkpoint, fork_thread_id="t1-fork"))

    # Then
    [row] = caught_up(runner, queue).items
    assert (row.thread_id, row.graph_id, row.node) == ("t1-fork", "refund", "approve")


# -- filters ---------------------------------------------------------------


@pytest.fixture
def mixed_queue(store, runner):
    """refund/approve x2, payout/approve (finance) x1, parallel/left+right."""
    refunds = approval_graph(store, name="refund")
    ask_for(refunds, "r1")
    ask_for(refunds, "r2")
    ask_for(approval_graph(store, name="payout", role="finance"), "p1")
    parallel_graph(store).invoke({"out": []}, config("b1"))
    runner.catch_up()


def test_the_queue_filtered_by_graph_holds_only_that_graphs_interrupts(mixed_queue, queue):
    page = queue.page(graph_id="refund")

    assert sorted(row.thread_id for row in page.items) == ["r1", "r2"]
    assert page.total == 2


def test_the_queue_filtered_by_node_holds_only_that_nodes_interrupts(mixed_queue, queue):
    page = queue.page(node="left")

    assert [(row.thread_id, row.node) for row in page.items] == [("b1", "left")]
    assert page.total == 1


def test_the_queue_filtered_by_role_holds_only_interrupts_requiring_it(mixed_queue, queue):
    page = queue.page(role="finance")

    assert [row.thread_id for row in page.items] == ["p1"]
    assert page.total == 1


@pytest.mark.parametrize("graph_id", [None, "refund", "payout", "parallel", "nothing"])
@pytest.mark.parametrize("node", [None, "approve", "left"])
@pytest.mark.parametrize("role", [None, "finance"])
def test_every_filtered_total_is_the_number_of_rows_the_pages_hold(
    store, runner, queue, graph_id, node, role
):
    # Given a queue that has seen answers, a cancellation and a fork
    record_history(store)
    ask_for(approval_graph(store, name="refund"), "extra")
    runner.catch_up()
    filters = {"graph_id": graph_id, "node": node, "role": role}

    # When the queue is read with each combination of kept-count filters
    first = queue.page(limit=1, **filters)

    # Then the total is the number of rows walking its pages finds
    assert first.total == len(walk(queue, 1, **filters))


def test_the_queue_filtered_by_minimum_age_holds_interrupts_at_least_that_old(store, runner, queue):
    # Given two interrupts, the first raised strictly before the second
    graph = approval_graph(store)
    ask_for(graph, "older")
    ask_for(graph, "newer")
    older, newer = caught_up(runner, queue).items
    assert moment(older.raised_at) < moment(newer.raised_at)

    # When read at the moment the older one turns one hour old
    now = moment(older.raised_at) + timedelta(hours=1)
    page = queue.page(min_age_seconds=3600, now=now)

    # Then
    assert [row.thread_id for row in page.items] == ["older"]
    assert page.total == 1


def test_a_rows_age_is_measured_from_raised_at_to_the_given_now(store, runner, queue):
    ask_for(approval_graph(store), "t1")
    [row] = caught_up(runner, queue).items

    [aged] = queue.page(now=moment(row.raised_at) + timedelta(minutes=90)).items

    assert aged.age_seconds == 5400.0


def test_nothing_is_overdue_while_no_interrupt_has_a_deadline(mixed_queue, queue):
    far_future = datetime.now(UTC) + timedelta(days=3650)

    page = queue.page(overdue=True, now=far_future)

    assert (page.items, page.total) == ([], 0)
    assert all(row.due_by is None for row in queue.page().items)


def test_overdue_rows_are_those_due_by_the_given_now_and_carry_their_due_by(store, runner, queue):
    # Given one interrupt due in an hour, one due in a day, and one with no deadline
    hour, day = approval_graph(store, name="hourly"), approval_graph(store, name="daily")
    hour.set_interrupt_deadline(3600)
    day.set_interrupt_deadline(timedelta(days=1))
    ask_for(hour, "soon")
    ask_for(day, "later")
    ask_for(approval_graph(store), "never")
    rows = {row.thread_id: row for row in caught_up(runner, queue).items}

    # When the queue is read two hours after the first was raised
    now = moment(rows["soon"].raised_at) + timedelta(hours=2)
    page = queue.page(overdue=True, now=now)

    # Then only the hourly one is overdue; each row's due_by is its raised_at plus the deadline
    assert [row.thread_id for row in page.items] == ["soon"]
    assert page.total == 1
    assert moment(rows["soon"].due_by) - moment(rows["soon"].raised_at) == timedelta(hours=1)
    assert moment(rows["later"].due_by) - moment(rows["later"].raised_at) == timedelta(days=1)
    assert rows["never"].due_by is None


def test_an_assigned_reviewer_shows_in_its_row_and_filters_the_queue(store, runner, queue):
    # Given two open interrupts
    graph = approval_graph(store)
    first, second = ask_for(graph, "t1"), ask_for(graph, "t2")

    # When the first is assigned to rita, then the second to rita and taken off again
    store.assign("t1", first.id, "rita", REVIEWER)
    store.assign("t2", second.id, "rita", REVIEWER)
    store.assign("t2", second.id, None, REVIEWER)
    runner.catch_up()

    # Then
    assert {row.thread_id: row.assigned_to for row in queue.page().items} == {
        "t1": "rita",
        "t2": None,
    }
    mine = queue.page(assigned_to="rita")
    assert ([row.thread_id for row in mine.items], mine.total) == (["t1"], 1)


def test_only_a_pending_interrupt_can_be_assigned(store, runner, queue):
    # Given an interrupt that was answered
    graph = approval_graph(store)
    pending = ask_for(graph, "t1")
    answer(graph, "t1")
    head = store.recorder.max_notification_id()

    # When / Then
    with pytest.raises(UnknownInterruptError, match="has no pending interrupt"):
        store.assign("t1", pending.id, "rita", REVIEWER)
    assert store.recorder.max_notification_id() == head


# -- order and paging ------------------------------------------------------


def test_the_queue_is_read_oldest_first(store, runner, queue):
    # Given five interrupts raised one after another
    graph = approval_graph(store)
    raised = [ask_for(graph, f"t{n}").id for n in range(5)]

    # When
    page = caught_up(runner, queue)

    # Then
    assert [row.interrupt_id for row in page.items] == raised
    assert [(r.raised_at, r.interrupt_id) for r in page.items] == sorted(
        (r.raised_at, r.interrupt_id) for r in page.items
    )


def test_a_page_holds_at_most_limit_rows_and_the_total_counts_them_all(store, runner, queue):
    graph = approval_graph(store)
    for n in range(5):
        ask_for(graph, f"t{n}")

    page = caught_up(runner, queue, limit=2)

    assert len(page.items) == 2
    assert page.total == 5
    assert page.next_cursor is not None


def test_walking_the_pages_visits_every_row_once_in_queue_order(store, runner, queue):
    # Given seven interrupts
    graph = approval_graph(store)
    for n in range(7):
        ask_for(graph, f"t{n}")
    whole = [row.interrupt_id for row in caught_up(runner, queue, limit=100).items]

    # When walked three at a time
    walked = walk(queue, limit=3)

    # Then
    assert walked == whole
    assert len(set(walked)) == 7


def test_the_last_page_has_no_cursor_even_when_the_rows_fill_it_exactly(store, runner, queue):
    graph = approval_graph(store)
    for n in range(4):
        ask_for(graph, f"t{n}")
    first = caught_up(runner, queue, limit=2)

    second = queue.page(limit=2, after=first.next_cursor)

    assert len(second.items) == 2
    assert second.next_cursor is None


def test_rows_added_between_pages_are_visited_once_and_none_is_skipped(store, runner, queue):
    # Given six interrupts
    graph = approval_graph(store)
    for n in range(6):
        ask_for(graph, f"t{n}")
    runner.catch_up()
    added = []

    def add_two(pages_read):
        if pages_read == 1:
            added.extend(ask_for(graph, f"late{n}").id for n in range(2))
            runner.catch_up()

    # When two more are raised after the first page was read
    walked = walk(queue, limit=2, between_pages=add_two)

    # Then every row, old and new, is met exactly once
    assert len(walked) == len(set(walked)) == 8
    assert walked[-2:] == added


def test_rows_removed_between_pages_are_not_visited_and_none_other_is_skipped(store, runner, queue):
    # Given six interrupts
    graph = approval_graph(store)
    for n in range(6):
        ask_for(graph, f"t{n}")
    ids = [row.interrupt_id for row in caught_up(runner, queue).items]

    def withdraw_two(pages_read):
        if pages_read == 1:
            answer(graph, "t0", True)
            store.cancel("t3", REVIEWER, "withdrawn")
            runner.catch_up()

    # When, after the first page, one row already read (t0, answered) and one
    # not yet read (t3, cancelled) leave the queue
    walked = walk(queue, limit=2, between_pages=withdraw_two)

    # Then the unread removed row is not met, and every other row is met once
    assert walked == [i for i in ids if i != ids[3]]


def test_an_interrupts_thread_is_found_open_and_after_it_was_answered(store):
    # Given an interrupt raised, and one raised then answered
    graph = approval_graph(store)
    open_one = ask_for(graph, "open", 10.0)
    answered = ask_for(graph, "done", 20.0)
    answer(graph, "done", True)
    runner = runner_for(store)
    runner.catch_up()

    # When / Then
    queue = PendingApprovals(runner.db)
    assert queue.thread_of(open_one.id) == "open"
    assert queue.thread_of(answered.id) == "done"
    assert queue.thread_of("0" * 32) is None
    runner.close()
