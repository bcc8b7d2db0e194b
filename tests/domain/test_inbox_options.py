"""An interrupt's options for the inbox: its title template and whether it may be
decided in bulk, given to `interrupt()` and recorded on InterruptRaised."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from domain.errors import InvalidUpdateError
from domain.history.forks import fork_at_version
from domain.record.thread import WorkflowThread
from domain.types import interrupt
from tests.graphs import linear_graph

AMY = {"id": "amy", "role": "agent"}
ADA = {"id": "ada", "role": "admin"}


class Draft(TypedDict):
    content: str
    outcome: Any


def config(thread_id: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread_id, "actor": AMY}}


def raised(store, thread_id: str) -> list[WorkflowThread.InterruptRaised]:
    events = store.thread_events(thread_id)
    return [e for e in events if isinstance(e, WorkflowThread.InterruptRaised)]


def test_an_interrupt_records_its_title_template_and_that_it_may_go_in_bulk(store):
    # Given a node that declares both
    def review(state: Draft) -> dict[str, Any]:
        return {"outcome": interrupt({"content": state["content"]}, title="{content}", bulk=True)}

    # When it pauses
    linear_graph(store, Draft, review).invoke({"content": "Draft: hi"}, config())

    # Then the event and the thread's open interrupt carry them
    [event] = raised(store, "t1")
    assert (event.title, event.bulk) == ("{content}", True)
    [record] = store.thread("t1").interrupts.values()
    assert (record["title"], record["bulk"]) == ("{content}", True)


def test_by_default_an_interrupt_has_no_title_and_is_decided_on_its_own(store):
    # Given
    def review(state: Draft) -> dict[str, Any]:
        return {"outcome": interrupt({"content": state["content"]})}

    # When
    linear_graph(store, Draft, review).invoke({"content": "x"}, config())

    # Then
    [event] = raised(store, "t1")
    assert (event.title, event.bulk) == (None, False)
    [record] = store.thread("t1").interrupts.values()
    assert "title" not in record
    assert "bulk" not in record


def test_a_fork_asks_its_question_with_the_same_title_and_bulk_option(store):
    # Given a paused thread whose interrupt declares both
    def review(state: Draft) -> dict[str, Any]:
        return {
            "outcome": interrupt({"content": state["content"]}, title="T: {content}", bulk=True)
        }

    linear_graph(store, Draft, review).invoke({"content": "x"}, config())

    # When an admin forks it where it stands
    fork = fork_at_version(store, "t1", store.thread("t1").version, ADA)

    # Then the fork's question keeps them
    [event] = raised(store, fork.thread_id)
    assert (event.title, event.bulk) == ("T: {content}", True)


@pytest.mark.parametrize("title", ["", "   ", "x" * 201, 5])
def test_a_title_must_be_text_of_1_to_200_characters(store, title):
    # Given
    def review(state: Draft) -> dict[str, Any]:
        return {"outcome": interrupt({"content": state["content"]}, title=title)}

    # Then
    with pytest.raises(InvalidUpdateError, match="title must be text of 1 to 200 characters"):
        linear_graph(store, Draft, review).invoke({"content": "x"}, config())
