"""Erasing a data subject: find their sealed values, refuse under a legal hold, destroy the key.

`find_subject` reads the whole log as stored for envelopes under the subject's
reference: the threads that hold them, how many, and (while the key is kept) the
plaintext they hold, which is what an erasure report then searches every place for.
`erase_subject` refuses while a legal hold covers one of those threads, else
destroys the key and records `SubjectErased`. What held plaintext outside the events
(read models, caches) is cleared by the service (`service/erasure.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError

from domain.errors import ErasureRefusedError, ThreadNotFoundError
from domain.privacy.envelopes import MARK, envelopes_in, open_envelope, subject_ref
from domain.privacy.erasures import ERASURES_ID, SubjectErasures
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json
from domain.retention.retention import Retention, holding
from domain.retention.scope import ThreadFacts

BATCH = 1_000
MIN_NEEDLE = 3  # shorter strings are not searched for: they would be found everywhere
DEFAULT_REASON = "the data subject's request for erasure (GDPR Art. 17)"
SAVE_ATTEMPTS = 5


@dataclass(frozen=True)
class SubjectFound:
    """What the log holds of one data subject."""

    ref: str
    kid: str | None  # the key kept (None: none)
    threads: tuple[str, ...]
    values: int  # envelopes under the subject's reference
    plaintexts: frozenset[str]  # the strings they hold, and the subject's id

    def needles(self) -> list[str]:
        """The texts to search a place for: each plaintext, and as JSON would escape it."""
        found: set[str] = set()
        for text in self.plaintexts:
            found.update((text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]))
        return sorted(n for n in found if len(n) >= MIN_NEEDLE)


@dataclass(frozen=True)
class Erased:
    """An erasure done: what was found, and where `SubjectErased` was recorded."""

    found: SubjectFound
    key_destroyed: bool
    position: int | None


def find_subject(store: Workflows, subject_id: str) -> SubjectFound:
    """The subject's sealed values in the log as stored (one pass over the log)."""
    ref = subject_ref(subject_id)
    key = store.subject_keys.keys([ref]).get(ref)
    marker = ref.encode()
    originators: set[Any] = set()
    values = 0
    plaintexts = {subject_id}
    for originator_id, state in stored_states(store):
        if marker not in state:
            continue
        for envelope in envelopes_in(store.mapper.transcoder.decode(state)):
            if envelope[MARK].get("subject") != ref:
                continue
            values += 1
            originators.add(originator_id)
            if key is not None:
                opened = open_envelope(envelope, {ref: key}, store.subject_cipher)
                plaintexts.update(_strings(opened))
    threads = sorted(_thread_id(store, originator) for originator in originators)
    return SubjectFound(
        ref, None if key is None else key[0], tuple(threads), values, frozenset(plaintexts)
    )


def erase_subject(
    store: Workflows, found: SubjectFound, actor: dict[str, Any], reason: str | None
) -> Erased:
    """Destroy the subject's key and record `SubjectErased`.

    Raises ErasureRefusedError, changing nothing, while a legal hold covers one of
    the subject's threads.
    """
    why = to_json(reason.strip() if reason and reason.strip() else DEFAULT_REASON, "The reason")
    holds = Retention(store).holds()
    for thread_id in found.threads:
        thread = store.thread(thread_id)
        if thread is None:
            raise ThreadNotFoundError(thread_id)
        facts = ThreadFacts(thread_id, thread.graph_id, "", "", "", thread.metadata, 0)
        held = holding(holds, facts)
        if held:
            names = ", ".join(h["hold_id"] for h in held)
            msg = (
                f"Refused: legal hold {names} covers thread {thread_id!r} of this data "
                "subject, and an erasure would destroy what it keeps. Nothing was erased; "
                "erase once the hold is lifted (holdpoint hold lift)."
            )
            raise ErasureRefusedError(msg)
    destroyed = store.subject_keys.destroy(found.ref)
    return Erased(found, destroyed, _record(store, found, actor, why))


def erasures(store: Workflows) -> list[dict[str, Any]]:
    """Every erasure recorded, oldest first."""
    register: SubjectErasures | None = fold_events(None, store.events.get(ERASURES_ID))
    return [] if register is None else list(register.erasures)


def _record(
    store: Workflows, found: SubjectFound, actor: dict[str, Any], reason: str
) -> int | None:
    for _ in range(SAVE_ATTEMPTS):  # another erasure may record first
        register = fold_events(None, store.events.get(ERASURES_ID)) or SubjectErasures.open()
        register.erased(found.ref, found.kid, list(found.threads), found.values, actor, reason)
        try:
            recordings = store.save(register)
        except IntegrityError:
            continue
        return recordings[-1].notification.id if recordings else None
    msg = "The erasure could not be recorded: other writers kept appending to the register"
    raise ErasureRefusedError(msg)


def stored_states(store: Workflows) -> Iterator[tuple[Any, bytes]]:
    """Every stored event's originator and state, in log order, in batches."""
    start = 1
    last = store.recorder.max_notification_id() or 0
    while start <= last:
        batch = store.recorder.select_notifications(start, BATCH, stop=last)
        if not batch:
            return
        for notification in batch:
            yield notification.originator_id, bytes(notification.state)
        start = batch[-1].id + 1


def _thread_id(store: Workflows, originator_id: Any) -> str:
    first = store.recorder.select_events(originator_id, limit=1)
    state = store.mapper.transcoder.decode(first[0].state) if first else {}
    return str(state.get("thread_id") or originator_id)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
