"""The memory store's items: each write and deletion recorded with who and when, a write
that changes nothing recording nothing, and what the store does not take refused before
anything is recorded. Every test runs on each store kind (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import threading

import pytest

from domain.errors import InvalidMemoryItemError, MemoryItemNotFoundError
from domain.memory.filters import check_filter, matches
from domain.memory.item import MemoryItem, item_uuid
from domain.memory.items import MemoryItems

AGENT = {"id": "agent-1", "role": "agent"}
ADMIN = {"id": "ada", "role": "admin"}
PREFS = ["users", "u-1", "preferences"]


@pytest.fixture
def items(store):
    return MemoryItems(store)


def recorded(store, namespace, key):
    return [type(e).__name__ for e in store.events.get(item_uuid(namespace, key))]


def test_a_new_item_is_recorded_with_its_writer_and_read_back(store, items):
    position = items.put(PREFS, "theme", {"dark": True}, AGENT)
    assert position == store.recorder.max_notification_id()
    item = items.get(PREFS, "theme")
    assert (item.namespace, item.key, item.value) == (PREFS, "theme", {"dark": True})
    [event] = store.events.get(item_uuid(PREFS, "theme"))
    assert isinstance(event, MemoryItem.ItemStored)
    assert event.actor == AGENT


def test_a_changed_value_is_a_new_event_and_the_same_value_records_nothing(store, items):
    items.put(PREFS, "theme", {"dark": True}, AGENT)
    assert items.put(PREFS, "theme", {"dark": True}, ADMIN) is None
    items.put(PREFS, "theme", {"dark": False}, ADMIN)
    assert recorded(store, PREFS, "theme") == ["ItemStored", "ItemChanged"]
    assert items.get(PREFS, "theme").value == {"dark": False}
    changes = items.history(PREFS, "theme")
    assert [(c.kind, c.actor["id"], c.value) for c in changes] == [
        ("stored", "agent-1", {"dark": True}),
        ("changed", "ada", {"dark": False}),
    ]


def test_a_deleted_item_is_not_read_but_its_history_stays_and_it_can_be_written_again(store, items):
    items.put(PREFS, "theme", {"dark": True}, AGENT)
    items.delete(PREFS, "theme", ADMIN)
    with pytest.raises(MemoryItemNotFoundError, match="theme"):
        items.get(PREFS, "theme")
    # Deleting it again, or an item never stored, records nothing (as LangGraph's store)
    assert items.delete(PREFS, "theme", ADMIN) is None
    assert items.delete(PREFS, "never", ADMIN) is None
    assert recorded(store, PREFS, "never") == []
    items.put(PREFS, "theme", {"dark": True}, AGENT)
    assert items.get(PREFS, "theme").value == {"dark": True}
    assert [c.kind for c in items.history(PREFS, "theme")] == ["stored", "deleted", "changed"]


@pytest.mark.parametrize(
    ("namespace", "key", "value", "says"),
    [
        ([], "k", {}, "non-empty list"),
        (["a.b"], "k", {}, "without a '.'"),
        ([""], "k", {}, "non-empty text"),
        (["a", 3], "k", {}, "label 3"),
        (["a"], "", {}, "Invalid key"),
        (["a"], "k", [1, 2], "JSON object"),
        (["a"], "k", {"when": object()}, "not JSON-serialisable"),
    ],
)
def test_what_the_store_does_not_take_is_refused_recording_nothing(
    store, items, namespace, key, value, says
):
    head = store.recorder.max_notification_id()
    with pytest.raises((InvalidMemoryItemError, TypeError), match=says):
        items.put(namespace, key, value, AGENT)
    assert store.recorder.max_notification_id() == head


def test_two_writers_of_a_new_item_both_land_one_after_the_other(store, items):
    other = MemoryItems(store)
    barrier = threading.Barrier(2)

    def write(writer, value):
        barrier.wait()
        writer.put(PREFS, "race", value, AGENT)

    threads = [
        threading.Thread(target=write, args=(items, {"n": 1})),
        threading.Thread(target=write, args=(other, {"n": 2})),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert recorded(store, PREFS, "race") == ["ItemStored", "ItemChanged"]
    assert items.get(PREFS, "race").value == items.history(PREFS, "race")[-1].value


def test_a_filter_matches_fields_exactly_or_by_operators():
    value = {"kind": "note", "stars": 4, "tags": ["a"]}
    assert matches(value, {"kind": "note"})
    assert matches(value, {"stars": {"$gte": 4, "$lt": 5}})
    assert not matches(value, {"stars": {"$gt": 4}})
    assert not matches(value, {"kind": {"$gt": 3}})  # not comparable: no match
    assert not matches(value, {"missing": "x"})
    with pytest.raises(InvalidMemoryItemError, match=r"\$regex"):
        check_filter({"kind": {"$regex": "n.*"}})
