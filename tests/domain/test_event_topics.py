"""Events are a permanent contract: their stored topics never change by accident.

A renamed or moved event class would make every thread recorded before the
change unreadable. If this test fails because an event was deliberately
renamed, register the old topic (`eventsourcing.utils.register_topic`) and
add the new name here.
"""

from eventsourcing.utils import get_topic

from domain.thread import WorkflowThread

RECORDED_TOPICS = {
    "domain.thread:WorkflowThread.ThreadStarted",
    "domain.thread:WorkflowThread.ThreadForked",
    "domain.thread:WorkflowThread.InputReceived",
    "domain.thread:WorkflowThread.NodeCompleted",
    "domain.thread:WorkflowThread.NodeFailed",
    "domain.thread:WorkflowThread.InterruptRaised",
    "domain.thread:WorkflowThread.InterruptResumed",
    "domain.thread:WorkflowThread.InterruptExpired",
    "domain.thread:WorkflowThread.InterruptAssigned",
    "domain.thread:WorkflowThread.InterruptApproved",
    "domain.thread:WorkflowThread.StateEdited",
    "domain.thread:WorkflowThread.ThreadCompleted",
    "domain.thread:WorkflowThread.ThreadFailed",
    "domain.thread:WorkflowThread.ThreadCancelled",
}


def event_classes() -> list[type]:
    return [
        value
        for value in vars(WorkflowThread).values()
        if isinstance(value, type)
        and value.__name__ not in ("Event", "Created", "Snapshot")
        and issubclass(value, WorkflowThread.Event | WorkflowThread.Created)
    ]


def test_every_event_class_keeps_its_recorded_topic():
    assert {get_topic(cls) for cls in event_classes()} == RECORDED_TOPICS


def test_event_names_are_in_the_past_tense():
    for cls in event_classes():
        assert cls.__name__.endswith("ed"), cls.__name__
