"""The long-term memory store's use cases: write, read, delete and trace an item.

Writes are recorded with the actor who made them; a write that changes nothing
records nothing. Search and the list of namespaces are the read model's
(`projections/memory_items.py`): an item is read here from its own events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from domain.errors import ConcurrentUpdateError, MemoryItemNotFoundError
from domain.memory.item import MemoryItem, check_key, check_namespace, check_value, item_uuid
from domain.record.application import RECORD_ATTEMPTS, Workflows, fold_events
from domain.record.hashing import to_json


@dataclass(frozen=True)
class ItemChange:
    """One recorded change of an item: what, by whom, when, and its place in the log."""

    kind: str  # stored, changed, deleted
    value: dict[str, Any] | None
    actor: dict[str, Any]
    at: datetime
    version: int


KINDS: dict[type, str] = {
    MemoryItem.ItemStored: "stored",
    MemoryItem.ItemChanged: "changed",
    MemoryItem.ItemDeleted: "deleted",
}


class MemoryItems:
    """Items of the memory store, kept as events in a `Workflows` store."""

    def __init__(self, store: Workflows) -> None:
        self.store = store

    def put(
        self, namespace: Sequence[str], key: str, value: Any, actor: dict[str, Any]
    ) -> int | None:
        """Store `value` under `key` in `namespace`; the log position of the event, or
        None when it was the item's value already. InvalidMemoryItemError."""
        labels, key, value = check_namespace(namespace), check_key(key), check_value(value)
        who = to_json(actor, "The actor")

        def change(item: MemoryItem | None) -> MemoryItem:
            if item is None:
                return MemoryItem(labels, key, value, who)
            item.change(value, who)
            return item

        return self._on_fresh_read(labels, key, change)

    def delete(self, namespace: Sequence[str], key: str, actor: dict[str, Any]) -> int | None:
        """Delete the item from the store's reads (its events stay); an item that is not
        there records nothing (None), as LangGraph's store deletes."""
        labels, key = check_namespace(namespace), check_key(key)
        who = to_json(actor, "The actor")

        def change(item: MemoryItem | None) -> MemoryItem | None:
            if item is not None:
                item.delete(who)
            return item

        return self._on_fresh_read(labels, key, change)

    def get(self, namespace: Sequence[str], key: str) -> MemoryItem:
        """The item, or MemoryItemNotFoundError (never stored, or deleted)."""
        item = self._item(check_namespace(namespace), check_key(key))
        if item is None or item.deleted:
            raise MemoryItemNotFoundError(namespace, key)
        return item

    def history(self, namespace: Sequence[str], key: str) -> list[ItemChange]:
        """Every recorded change of the item, oldest first (none if never stored)."""
        uuid = item_uuid(check_namespace(namespace), check_key(key))
        events: list[Any] = list(self.store.events.get(uuid))
        return [
            ItemChange(
                KINDS[type(event)],
                getattr(event, "value", None),
                event.actor,
                event.timestamp,
                event.originator_version,
            )
            for event in events
        ]

    def _item(self, namespace: list[str], key: str) -> MemoryItem | None:
        item: MemoryItem | None = fold_events(
            None, self.store.events.get(item_uuid(namespace, key))
        )
        return item

    def _on_fresh_read(
        self, namespace: list[str], key: str, change: Callable[[MemoryItem | None], Any]
    ) -> int | None:
        """Apply `change` to the item as recorded and save it; again on a fresh read
        while another writer saves first."""
        for _ in range(RECORD_ATTEMPTS):
            item: Aggregate | None = change(self._item(namespace, key))
            if item is None or not item.pending_events:
                return None  # nothing to record
            try:
                recordings = self.store.save(item)
            except IntegrityError:
                continue
            return recordings[-1].notification.id if recordings else None
        raise ConcurrentUpdateError(f"{namespace}/{key}")
