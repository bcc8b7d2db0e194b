"""What is wrong with one aggregate's events, and where: the slow, exact check.

`domain.integrity.whole_log` reads the whole log fast and notes the aggregates that
look wrong; here each one is read whole and explained, with the rules of
`domain.record.chain` and the library's own decoding (`ReferenceHasher`), which the
fast hasher must equal byte for byte:

- reordered: a version recorded at a later position than a higher version;
- missing: a version absent between 1 and the highest one (deleted);
- swapped: an event whose content hashes correctly under another version
  of the same thread, at most `SWAP_WINDOW` versions away (two events
  traded places);
- altered: an event whose content does not match its hash; or one that
  matches its own hash but is not the hash the next event links to (it was
  rewritten and its hash recomputed, or the next one was forged);
- forged: a first event that starts no chain, or names a thread whose id is
  not this aggregate's (moved from another thread or made up);
- unreadable: a stored event that cannot be decoded (`domain.integrity.decodable`:
  JSON that cannot be read, a topic that names no class, a missing field), of a
  thread or of any other aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from eventsourcing.persistence import JSONTranscoder

from domain.integrity.decodable import (
    event_class,
    problem_of,
    reference_transcoder,
    thread_id_in,
)
from domain.integrity.whole_log import (
    ALTERED,
    FORGED,
    GENESIS_TOPICS,
    MISSING,
    REORDERED,
    SWAPPED,
    THREAD_TOPICS,
    UNREADABLE,
    Decoded,
    Problem,
    Row,
    event_name,
    thread_aggregate_id,
)
from domain.record.chain import RecordedEvent, hashed_fields
from domain.record.hashing import GENESIS_HASH, event_hash

_UNREADABLE: Decoded = (None, None, None, None, None)
SWAP_WINDOW = 64  # versions either side searched for the true place of a misplaced event


def decode_state(transcoder: JSONTranscoder, state: bytes) -> dict[str, Any] | None:
    """A stored state as the library reads it, or None if it cannot be read."""
    try:
        data = transcoder.decode(state)
    except Exception:  # any failure to decode is the verdict "unreadable"
        return None
    return data if isinstance(data, dict) else None


def hash_as(record: RecordedEvent, thread_id: Any, version: int) -> str | None:
    """The hash `record` must carry were it version `version` of `thread_id`; None if it can't."""
    state = record.state
    try:
        return event_hash(
            record.name,
            thread_id,
            version,
            state["timestamp"],
            state["prev_hash"],
            hashed_fields(record),
        )
    except Exception:  # a missing field, a non-JSON value: it cannot be hashed
        return None


class ReferenceHasher:
    """Decodes and hashes a thread event exactly as `domain.record.chain` does (slow)."""

    def __init__(self) -> None:
        self.transcoder = reference_transcoder()

    def __call__(self, topic: str, state: bytes, thread_id: str | None, version: int) -> Decoded:
        data = decode_state(self.transcoder, state)
        if data is None:
            return _UNREADABLE
        named = data.get("thread_id")
        tid = named if thread_id is None else thread_id
        record = RecordedEvent(version, event_name(topic), data)
        recomputed = hash_as(record, tid, version) if isinstance(tid, str) else None
        stamp = data.get("timestamp")
        moment = stamp.isoformat() if isinstance(stamp, datetime) else None
        return named, data.get("prev_hash"), data.get("event_hash"), recomputed, moment


def diagnose(aggregate_id: str, rows: Sequence[Row], transcoder: JSONTranscoder) -> list[Problem]:
    """Every problem with one aggregate, given all its rows (any order)."""
    if not rows:
        return [Problem(MISSING, "the aggregate has no events left", aggregate_id)]
    if any(row[3] in THREAD_TOPICS for row in rows):
        return _Thread(aggregate_id, rows, transcoder).problems()
    problems = _order_problems(aggregate_id, None, rows, "event")
    for position, _, version, topic, state in sorted(rows):
        why = (
            None
            if event_class(topic) is None
            else problem_of(topic, decode_state(transcoder, state))
        )
        if why is not None:  # (a topic that names no class is an order problem's)
            problems.append(_unreadable(aggregate_id, None, version, position, topic, why))
    return problems


def _unreadable(
    aggregate_id: str, thread_id: str | None, version: int, position: int, topic: str, why: str
) -> Problem:
    detail = f"version {version} ({event_name(topic)}) cannot be decoded: {why}"
    return Problem(UNREADABLE, detail, aggregate_id, thread_id, version, position)


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for number in numbers:
        if out and number == out[-1][1] + 1:
            out[-1] = (out[-1][0], number)
        else:
            out.append((number, number))
    return out


def _order_problems(
    aggregate_id: str, thread_id: str | None, rows: Sequence[Row], what: str
) -> list[Problem]:
    """Versions out of position order, and versions missing below the highest."""
    problems = []
    highest: tuple[int, int] | None = None  # (version, position)
    for position, _, version, topic, _ in sorted(rows):
        if highest is not None and version < highest[0]:
            problems.append(
                Problem(
                    REORDERED,
                    f"version {version} is at position {position}, after version "
                    f"{highest[0]} at position {highest[1]}: the {what}s were reordered",
                    aggregate_id,
                    thread_id,
                    version,
                    position,
                )
            )
        elif highest is None or version > highest[0]:
            highest = (version, position)
        if event_class(topic) is None:
            why = problem_of(topic, None) or ""
            problems.append(_unreadable(aggregate_id, thread_id, version, position, topic, why))
        elif (topic in THREAD_TOPICS) != (what == "thread event"):
            kind = "a thread event" if topic in THREAD_TOPICS else "not a thread event"
            problems.append(
                Problem(
                    ALTERED,
                    f"version {version} is {kind} ({topic}) in an aggregate of {what}s: "
                    "its type was altered, or it was moved here",
                    aggregate_id,
                    thread_id,
                    version,
                    position,
                )
            )
    present = {row[2] for row in rows}
    absent = [v for v in range(1, max(present) + 1) if v not in present]
    for first, last in _ranges(absent):
        which = f"version {first} is" if first == last else f"versions {first}-{last} are"
        problems.append(
            Problem(
                MISSING,
                f"{which} missing: deleted from the store",
                aggregate_id,
                thread_id,
                first,
            )
        )
    return problems


class _Thread:
    """The diagnosis of one thread's events."""

    def __init__(self, aggregate_id: str, rows: Sequence[Row], transcoder: JSONTranscoder) -> None:
        self.aggregate_id = aggregate_id
        self.rows = {row[2]: row for row in rows}
        self.records: dict[int, RecordedEvent | None] = {}
        self.undecodable: dict[int, str] = {}  # version -> why the mapper cannot decode it
        for _, _, version, topic, state in rows:
            data = decode_state(transcoder, state)
            self.records[version] = (
                None if data is None else RecordedEvent(version, event_name(topic), data)
            )
            why = problem_of(topic, data)
            if why is not None:
                self.undecodable[version] = why
        first = self.records.get(1)
        named = first.state.get("thread_id") if first is not None else None
        if first is None and 1 in self.rows:  # a damaged start may still spell its thread
            named = thread_id_in(aggregate_id, self.rows[1][4])
        self.thread_id: str | None = named if isinstance(named, str) else None
        self.all_rows = rows

    def problem(self, kind: str, version: int, detail: str) -> Problem:
        position = self.rows[version][0] if version in self.rows else None
        return Problem(kind, detail, self.aggregate_id, self.thread_id, version, position)

    def problems(self) -> list[Problem]:
        problems = _order_problems(self.aggregate_id, self.thread_id, self.all_rows, "thread event")
        problems += self._first_event()
        flagged = {p.version for p in problems if p.kind != REORDERED}
        content_ok: dict[int, bool] = {}
        for version in sorted(self.records):
            if version in flagged:
                continue
            problem = self._content(version)
            content_ok[version] = problem is None
            if problem is not None:
                problems.append(problem)
        problems += self._links(content_ok)
        return sorted(problems, key=lambda p: (p.version or 0, p.kind))

    def _first_event(self) -> list[Problem]:
        if 1 not in self.rows:
            return []  # reported as missing
        record, topic = self.records[1], self.rows[1][3]
        if record is None:
            return []  # reported as unreadable
        if topic not in GENESIS_TOPICS or record.state.get("prev_hash") != GENESIS_HASH:
            detail = "version 1 does not start a thread (not ThreadStarted or ThreadForked, "
            return [self.problem(FORGED, 1, detail + "or its prev_hash is not the genesis)")]
        if self.thread_id is None or thread_aggregate_id(self.thread_id) != self.aggregate_id:
            return [
                self.problem(
                    FORGED,
                    1,
                    f"version 1 names thread {self.thread_id!r}, whose events are kept "
                    "under another id: it was moved here from another thread, or forged",
                )
            ]
        return []

    def _content(self, version: int) -> Problem | None:
        """What is wrong with one version's content: swapped, then unreadable (the
        mapper cannot decode it; a swapped event often cannot be, under its row's
        topic), then altered; None if nothing."""
        record = self.records[version]
        if record is None:
            return self._unreadable(version)
        if self.thread_id is None:
            # without version 1, nothing can be hashed: reported as missing
            return None if version not in self.undecodable else self._unreadable(version)
        claimed = record.state.get("event_hash")
        if hash_as(record, self.thread_id, version) == claimed:
            return None if version not in self.undecodable else self._unreadable(version)
        for other in sorted(self.rows):
            if other == version or abs(other - version) > SWAP_WINDOW:
                continue
            theirs = RecordedEvent(other, event_name(self.rows[other][3]), record.state)
            if claimed in (
                hash_as(record, self.thread_id, other),
                hash_as(theirs, self.thread_id, other),
            ):
                return self.problem(
                    SWAPPED,
                    version,
                    f"version {version} holds the event recorded as version {other}: "
                    "the two were swapped",
                )
        if version in self.undecodable:
            return self._unreadable(version)
        return self.problem(
            ALTERED,
            version,
            f"version {version} does not match its hash: its content was altered",
        )

    def _unreadable(self, version: int) -> Problem:
        why = self.undecodable.get(version) or "its stored state is not JSON"
        name = event_name(self.rows[version][3])
        return self.problem(
            UNREADABLE, version, f"version {version} ({name}) cannot be decoded: {why}"
        )

    def _links(self, content_ok: dict[int, bool]) -> list[Problem]:
        problems = []
        for version in sorted(content_ok):
            before = version - 1
            if not content_ok[version] or not content_ok.get(before):
                continue
            record, previous = self.records[version], self.records[before]
            if record is None or previous is None:  # content_ok says both were read
                continue
            if record.state.get("prev_hash") != previous.state.get("event_hash"):
                problems.append(
                    self.problem(
                        ALTERED,
                        before,
                        f"version {before} matches its own hash, but version {version} links "
                        f"to another: version {before} was rewritten and its hash recomputed "
                        f"(or version {version} was forged)",
                    )
                )
        return problems
