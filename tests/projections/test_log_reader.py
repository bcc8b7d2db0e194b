"""The projectors' log reader: the same events as the library's, read faster.

Given a recorded history, reading a range of positions gives exactly the
events the library's `select_notifications` and mapper give for it, of the
topics asked for: same positions, same classes, same attributes. Values that
look like the library's typed JSON are decoded by the library itself. Each
entry also carries what every read model needs: its originator's key, its
time as read-model text, and its thread, found in the log even when the
reader starts after the thread's start.
"""

from __future__ import annotations

from uuid import uuid4

from eventsourcing.utils import get_topic

from domain.record.thread import WorkflowThread
from projections.database import database_for
from projections.log_reader import Entry, LogReader
from projections.threads import Thread
from projections.timestamps import utc_text
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
    entries = reader.read(after, upto, topics)
    return [(e.position, e.topic, type(e.event), vars(e.event)) for e in entries]


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

    assert [entry.position for entry in read] == [4, 5, 6, 7]


def test_only_the_topics_asked_for_are_read(store):
    record_history(store)
    head = store.recorder.max_notification_id()
    raised = get_topic(WorkflowThread.InterruptRaised)
    reader = LogReader(store, database_for(store))

    read = reader.read(0, head, {raised})

    assert read
    assert {entry.topic for entry in read} == {raised}
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


class NotingReader(LogReader):
    """A log reader that notes the topic of each event it decodes itself."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.decoded = []

    def decode(self, topic, uuid, version, state):
        self.decoded.append(topic)
        return super().decode(topic, uuid, version, state)


def test_every_event_of_the_range_is_decoded_once_as_it_is_read(store):
    # Given a history, and a reader asked for one topic only
    record_history(store)
    head = store.recorder.max_notification_id()
    resumed = get_topic(WorkflowThread.InterruptResumed)
    reader = NotingReader(store, database_for(store))

    # When it reads the log
    entries = reader.read(0, head, {resumed})

    # Then it gives the events of that topic, every one decoded already
    assert entries
    assert {e.topic for e in entries} == {resumed}
    assert all(isinstance(e.event, WorkflowThread.InterruptResumed) for e in entries)
    # And every event of the range was decoded, once, whatever its topic
    assert sorted(reader.decoded) == sorted(all_topics_in_order(store))


def all_topics_in_order(store):
    return [n.topic for n in store.recorder.select_notifications(start=1, limit=100_000)]


def test_an_empty_range_reads_nothing(store):
    record_history(store)
    reader = LogReader(store, database_for(store))

    assert reader.read(5, 5, all_topics(store)) == []
    assert reader.read(0, 9, set()) == []


# -- what every read model gets with each event ------------------------------


def test_each_entry_carries_its_originators_key_and_its_time_as_read_model_text(store):
    record_history(store)
    head = store.recorder.max_notification_id()
    reader = LogReader(store, database_for(store))

    entries = reader.read(0, head, all_topics(store))

    assert entries
    assert [(e.key, e.at) for e in entries] == [
        (e.event.originator_id.hex, utc_text(e.event.timestamp)) for e in entries
    ]


def test_each_entry_carries_the_thread_and_graph_its_thread_started_with(store):
    # Given two threads of two graphs, each started, asked and answered
    ask_for(approval_graph(store), "t1")
    answer(approval_graph(store), "t1")
    ask_for(approval_graph(store, name="payout"), "t2")
    head = store.recorder.max_notification_id()

    # When
    entries = LogReader(store, database_for(store)).read(0, head, all_topics(store))

    # Then
    by_originator = {e.key: e.thread for e in entries}
    assert sorted(by_originator.values()) == [Thread("t1", "refund"), Thread("t2", "payout")]
    assert all(e.thread == by_originator[e.key] for e in entries)


def test_a_reader_that_starts_after_a_threads_start_finds_the_thread_in_the_log(store):
    # Given a thread started, then answered after a reader's starting position
    graph = approval_graph(store, name="payout")
    ask_for(graph, "t1")
    asked = store.recorder.max_notification_id()
    answer(graph, "t1")
    head = store.recorder.max_notification_id()

    # When a new reader reads only what came after the question
    entries = LogReader(store, database_for(store)).read(asked, head, all_topics(store))

    # Then every entry still knows its thread, though its start was not read
    assert entries
    assert {e.thread for e in entries} == {Thread("t1", "payout")}


def test_an_originator_the_log_has_no_thread_start_for_has_no_thread(store):
    # Given an entry of an originator the store has no events of
    ask_for(approval_graph(store), "t1")
    raised = WorkflowThread.InterruptRaised
    stray = Entry(1, get_topic(raised), raised, uuid4().hex, "", event=object())

    # When
    LogReader(store, database_for(store)).threads.resolve([stray])

    # Then
    assert stray.thread is None
