"""One item of the long-term memory store, as its events tell it.

LangGraph's store keeps JSON objects under a key in a namespace (a path of labels,
`("users", "u-1", "preferences")`) and overwrites them in place. Here each write
and each deletion is an event with who made it and when, so the history of what an
agent was told to remember is on the record. The item's id is derived from its
namespace and key: a second writer of a new item finds the first one's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import InvalidMemoryItemError
from domain.record.hashing import to_json

MEMORY_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/memory-items")
MAX_KEY_CHARS = 1024
MAX_LABELS = 32


def item_uuid(namespace: Sequence[str], key: str) -> UUID:
    return uuid5(MEMORY_NAMESPACE, json.dumps([list(namespace), key], ensure_ascii=False))


def check_namespace(namespace: Any, what: str = "namespace") -> list[str]:
    """A namespace as the store takes it: labels of text, none empty or with a `.`
    (LangGraph's SDKs join them with dots)."""
    if not isinstance(namespace, list | tuple) or not namespace:
        msg = f'Invalid {what}: a non-empty list of labels, e.g. ["users", "u-1"]'
        raise InvalidMemoryItemError(msg)
    if len(namespace) > MAX_LABELS:
        raise InvalidMemoryItemError(f"Invalid {what}: at most {MAX_LABELS} labels")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            msg = f"Invalid {what} label {label!r}: non-empty text without a '.'"
            raise InvalidMemoryItemError(msg)
    return list(namespace)


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        msg = f"Invalid key {str(key)[:40]!r}: non-empty text of at most {MAX_KEY_CHARS} chars"
        raise InvalidMemoryItemError(msg)
    return key


def check_value(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        msg = (
            f"Invalid value: a JSON object, as LangGraph's store keeps (not {type(value).__name__})"
        )
        raise InvalidMemoryItemError(msg)
    checked: dict[str, Any] = to_json(value, "The value")
    return checked


class MemoryItem(Aggregate):
    """A JSON object under a key in a namespace; deleted items keep their history.
    `created_on` and `modified_on` (the library's) are the times of its first and last
    event."""

    class ItemStored(Aggregate.Created):
        namespace: list[str]
        key: str
        value: dict[str, Any]
        actor: dict[str, Any]

    class ItemChanged(Aggregate.Event):
        value: dict[str, Any]
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.value = self.value
            aggregate.deleted = False

    class ItemDeleted(Aggregate.Event):
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = True

    @staticmethod
    def create_id(namespace: list[str], key: str) -> UUID:
        return item_uuid(namespace, key)

    def __init__(
        self, namespace: list[str], key: str, value: dict[str, Any], actor: dict[str, Any]
    ) -> None:
        self.namespace = namespace
        self.key = key
        self.value = value
        self.deleted = False
        del actor  # on the event: who wrote it is the record's, not the item's

    def change(self, value: dict[str, Any], actor: dict[str, Any]) -> None:
        """Store a new value; the value it has already records nothing."""
        if self.deleted or value != self.value:
            self.trigger_event(self.ItemChanged, value=value, actor=actor)

    def delete(self, actor: dict[str, Any]) -> None:
        """Delete the item from the store's reads; deleted already records nothing."""
        if not self.deleted:
            self.trigger_event(self.ItemDeleted, actor=actor)
