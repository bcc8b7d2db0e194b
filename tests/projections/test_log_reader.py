"""The projectors' log reader: the same events as the library's, read faster.

Given a recorded history, reading a range of positions gives exactly the
events the library's `select_notifications` and mapper give for it, of the
topics asked for: same positions, same classes, same attributes. Values that
look like the library's typed JSON are decoded by the library itself.
"""

from __future__ import annotations

from eventsourcing.utils import get_topic

from domain.thread import WorkflowThread
from projections.database import database_for
from projections.log_reader import LogReader
from tests.projections.histories import answer, approval_graph, ask_for, record_history


def library_view(store, after, upto, topics=None):
    notifications = store.recorder.select_notifications(
        start=after + 1, limit=upto - after, stop=upto, topics=topics or []
    )
    return [
        (n.id, n.topic, type(event), vars(event))
        for n in notifications
        for event in [store.mapper.to_domain_event(n)]
    ]


def reader_view(reader, after, upto, topics):
    return [(p, t, type(e), vars(e)) for p, t, e in reader.read(after, upto, topics)]


def all_topics(store):
    return {n.topic for n in store.recorder.select_notifications(start=1, limit=100_000)}


def test_the_whole_log_reads_as_the_library_reads_it(store):
    record_history(store)
    head = store.recorder.max_notification_id()
    reader = LogReader(store, database_for(store))

    assert reader_view(reader, 0, head, all_topics(store)) == library_view(store, 0, head)


def test_a_range_gives_the_events_after_its_start_up_to_its_end(store):
    record_history(store)
    reader = LogReader(store, database_for(store))

    read = reader.read(3, 7, all_topics(store))

    assert [position for position, _, _ in read] == [4, 5, 6, 7]


def test_only_the_topics_asked_for_are_read(store):
    record_history(store)
    head = store.recorder.max_notification_id()
    raised = get_topic(WorkflowThread.InterruptRaised)
    reader = LogReader(store, database_for(store))

    read = reader.read(0, head, {raised})

    assert read
    assert {topic for _, topic, _ in read} == {raised}
    assert reader_view(reader, 0, head, {raised}) == library_view(store, 0, head, [raised])


def test_values_shaped_like_typed_json_decode_as_the_library_decodes_them(store):
    # Given answers that hold the library's marker for typed values, as a key and as a value
    graph = approval_graph(store)
    for thread_id, resume in (("t1", {"_type_": "note"}), ("t2", {"kind": "_type_"})):
        ask_for(graph, thread_id)
        answer(graph, thread_id, resume)
    head = store.recorder.max_notification_id()
    reader = LogReader(store, database_for(store))

    # Then it reads back as the library reads it
    assert reader_view(reader, 0, head, all_topics(store)) == library_view(store, 0, head)


def test_an_empty_range_reads_nothing(store):
    record_history(store)
    reader = LogReader(store, database_for(store))

    assert reader.read(5, 5, all_topics(store)) == []
    assert reader.read(0, 9, set()) == []
