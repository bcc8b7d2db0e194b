"""The subjects' keys: kept apart from the events, one row per subject, deleted to erase.

A store's keys live in a table beside its events (`holdpoint_subject_keys`: the SQL
stores' is `service/subject_keys.py`), or in memory for a memory store. Nothing
keeps a key in a process beyond one read: a key erased by another process is gone for
the next read everywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol

from domain.privacy.envelopes import Keys, SubjectKey, new_key


class SubjectKeys(Protocol):
    """Where a store keeps its subjects' keys."""

    def key_for(self, ref: str) -> SubjectKey:
        """The subject's key, made and kept if it has none (two writers agree on one)."""
        ...

    def keys(self, refs: Iterable[str]) -> Keys:
        """The keys kept of `refs` (an erased subject's is missing)."""
        ...

    def destroy(self, ref: str) -> bool:
        """Delete the subject's key; whether there was one."""
        ...

    def close(self) -> None:
        """Release what holds the keys (the store closes)."""
        ...


class MemorySubjectKeys:
    """A memory store's keys, for as long as the process lives."""

    def __init__(self) -> None:
        self._keys: dict[str, SubjectKey] = {}
        self._lock = threading.Lock()

    def key_for(self, ref: str) -> SubjectKey:
        with self._lock:
            return self._keys.setdefault(ref, new_key())

    def keys(self, refs: Iterable[str]) -> Keys:
        with self._lock:
            return {ref: self._keys[ref] for ref in refs if ref in self._keys}

    def destroy(self, ref: str) -> bool:
        with self._lock:
            return self._keys.pop(ref, None) is not None

    def close(self) -> None:
        """Nothing to release: the keys live as long as the store's memory."""
