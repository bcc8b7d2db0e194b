"""Whole-log verification: every thread's hash chain and the log's global sequence.

Pure: rows of the events table come in, in position (notification id) order,
and a verdict comes out. Reading the table is somebody else's job (`audit/`),
and so is the fast hashing of a row: a `Hasher` is injected;
`domain.integrity.diagnosis.ReferenceHasher` is the slow, exact one that a fast one
must equal.

The log is checked in ranges of positions, each by a `RangeCheck` (several
may run in parallel), whose summaries a `LogCheck` joins in order:

- each aggregate's versions run 1, 2, 3... with nothing missing, in the order
  of their positions;
- a thread's events each match their own hash, and each links to the hash of
  the one before; its first event names the thread whose id is the
  aggregate's (`thread_uuid`), and every event of a thread is a thread event;
- where the store hands out positions densely (SQLite, memory), a position
  with no event means a deleted event. PostgreSQL's sequence skips the ids of
  rolled-back inserts, so gaps there are only counted. A position a recorded
  purge lists (`ThreadsPurged`, `domain.retention.purge_ledger`) is no gap:
  its Merkle leaf, recorded with the purge, stands in for the event, so that
  seals made before the purge still compute;
- an event of another aggregate (a key, a refusal, a seal), which no hash
  chain covers, can be decoded (a `Checker` is injected:
  `domain.integrity.decodable.StateChecker`).

A check notes which aggregates look wrong ("suspects"); `domain.integrity.diagnosis`
then reads each suspect whole and says what is wrong, and where.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.integrity.merkle import leaf_data, leaf_hash
from domain.record.hashing import GENESIS_HASH
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import THREAD_NAMESPACE

ALTERED = "altered"
MISSING = "missing"
REORDERED = "reordered"
SWAPPED = "swapped"
FORGED = "forged"
UNREADABLE = "unreadable"

_THREAD_PREFIX = "domain.thread:WorkflowThread."
_THREAD_NAMESPACE = THREAD_NAMESPACE.bytes
GENESIS_TOPICS = frozenset(_THREAD_PREFIX + name for name in ("ThreadStarted", "ThreadForked"))
THREAD_TOPICS = frozenset(
    _THREAD_PREFIX + name
    for name, value in vars(WorkflowThread).items()
    if isinstance(value, type)
    and name not in ("Event", "Created")
    and issubclass(value, WorkflowThread.Event | WorkflowThread.Created)
)

Row = tuple[int, str, int, str, bytes]  # position, aggregate id (32 hex), version, topic, state
# What a hasher reads from a thread event: the thread id it names (genesis events only),
# prev_hash, event_hash, the hash its content must carry (None: unreadable), its timestamp.
Decoded = tuple[Any, Any, Any, str | None, str | None]


class Hasher(Protocol):
    def __call__(self, topic: str, state: bytes, thread_id: str | None, version: int) -> Decoded:
        """Decode a thread event's stored state and recompute its hash.

        `thread_id` is the thread's id, or None for the thread's first event,
        whose own `thread_id` field is then used (and returned).
        """


def thread_aggregate_id(thread_id: str) -> str:
    """`thread_uuid(thread_id).hex`, without building a UUID (once per thread in a scan);
    "" for a name that is not Unicode text (a lone surrogate read from a tampered row)."""
    try:
        name = thread_id.encode()
    except UnicodeEncodeError:
        return ""
    # uuid5 is SHA-1 over the namespace and the name, with its version and variant bits set
    digest = bytearray(hashlib.sha1(_THREAD_NAMESPACE + name).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    return digest.hex()


def event_name(topic: str) -> str:
    """The event's type name, as the hash chain names it."""
    return topic.rpartition(":")[2].rpartition(".")[2]


class Checker(Protocol):
    def __call__(self, topic: str, state: bytes) -> str | None:
        """Why a stored event cannot be decoded, or None if it can."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the log: its kind (`altered`, `missing`...), and where."""

    kind: str
    detail: str
    aggregate_id: str | None = None
    thread_id: str | None = None
    version: int | None = None
    position: int | None = None
    until: int | None = None  # the problem spans positions `position`..`until`


@dataclass
class RangeSummary:
    """What one range of positions says about the log, to be joined with its neighbours.

    `spans` maps each aggregate seen to [is_thread, first_version, first_prev_hash,
    first_position, last_version, last_hash, last_position, thread_id].
    """

    after: int
    upto: int
    events: int = 0
    thread_events: int = 0
    spans: dict[str, list[Any]] = field(default_factory=dict)
    suspects: dict[str, int] = field(default_factory=dict)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    leaves: bytes = b""
    late: list[tuple[int, str, int, str]] = field(default_factory=list)


class RangeCheck:
    """Checks the rows at positions in (after, upto], fed in position order.

    `leaves_upto`: positions up to which Merkle leaf hashes are gathered (for a
    seal). `late_after`: events past this position have their timestamps kept
    (to compare with a seal's time). `checker`: what tells whether an event of
    an aggregate that is not a thread can be decoded (None: not checked).
    """

    def __init__(
        self,
        after: int,
        upto: int,
        hasher: Hasher,
        *,
        leaves_upto: int = 0,
        late_after: int | None = None,
        checker: Checker | None = None,
    ) -> None:
        self.summary = RangeSummary(after, upto)
        self.hasher = hasher
        self.checker = checker
        self.last = after
        self.leaves_upto = leaves_upto
        self.late_after = late_after
        self._leaves: list[bytes] = []

    def feed(self, rows: Iterable[Row], thread_ids: Mapping[str, str]) -> None:
        """Check rows; `thread_ids` names the threads whose first event is before this range."""
        summary, spans, hasher = self.summary, self.summary.spans, self.hasher
        suspects, gaps = summary.suspects, summary.gaps
        threads, genesis = THREAD_TOPICS, GENESIS_TOPICS
        leaves_upto, late_after = self.leaves_upto, self.late_after
        late = summary.late
        events = thread_events = 0
        last = self.last
        for position, aggregate_id, version, topic, state in rows:
            events += 1
            if position != last + 1:
                gaps.append((last + 1, position - 1))
            last = position
            span = spans.get(aggregate_id)
            if topic in threads:
                thread_events += 1
                is_thread = True
                if version == 1:
                    named, prev, claimed, recomputed, stamp = hasher(topic, state, None, 1)
                    tid = named
                    if (
                        topic not in genesis
                        or prev != GENESIS_HASH
                        or not isinstance(tid, str)
                        or thread_aggregate_id(tid) != aggregate_id
                    ):
                        suspects.setdefault(aggregate_id, position)
                else:
                    tid = span[7] if span is not None else thread_ids.get(aggregate_id)
                    named, prev, claimed, recomputed, stamp = hasher(topic, state, tid, version)
                if recomputed is None or recomputed != claimed:
                    suspects.setdefault(aggregate_id, position)
                if late_after is not None and position > late_after and stamp:
                    late.append((position, aggregate_id, version, stamp))
            else:
                is_thread = False
                prev = claimed = tid = None
                if self.checker is not None and self.checker(topic, state) is not None:
                    suspects.setdefault(aggregate_id, position)
            if span is None:
                spans[aggregate_id] = [
                    is_thread, version, prev, position, version, claimed, position, tid
                ]  # fmt: skip
            else:
                if version != span[4] + 1 or is_thread is not span[0] or prev != span[5]:
                    suspects.setdefault(aggregate_id, position)
                span[4], span[5], span[6] = version, claimed, position
            if position <= leaves_upto:
                self._leaves.append(self._leaf(position, aggregate_id, version, topic, state))
        self.last = last
        summary.events += events
        summary.thread_events += thread_events

    def _leaf(
        self, position: int, aggregate_id: str, version: int, topic: str, state: bytes
    ) -> bytes:
        return leaf_hash(leaf_data(position, aggregate_id, version, topic, state))

    def finish(self) -> RangeSummary:
        """The summary; a range ends at `upto`, so positions after the last row are gaps."""
        summary = self.summary
        if self.last < summary.upto:
            summary.gaps.append((self.last + 1, summary.upto))
        summary.leaves = b"".join(self._leaves)
        self._leaves = []
        return summary


@dataclass
class LogVerdict:
    """The log's verdict: counts, problems, and what a seal would need."""

    events: int = 0
    thread_events: int = 0
    aggregates: int = 0
    threads: int = 0
    head: int = 0
    gaps: list[tuple[int, int]] = field(default_factory=list)
    suspects: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    dense: bool = True  # positions handed out without gaps: a gap is a deletion
    purged: int = 0  # positions with no event that a recorded purge accounts for

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def missing_positions(self) -> int:
        return sum(upto - after + 1 for after, upto in self.gaps)


class LogCheck:
    """Joins range summaries, in position order, into the log's verdict.

    `purged` maps each position a recorded purge lists to its Merkle leaf hash;
    `leaves_upto` is the scan's (`RangeCheck`): the purged leaves up to it are put
    in their places among the summaries' leaves.
    """

    def __init__(
        self, *, dense: bool, purged: Mapping[int, bytes] | None = None, leaves_upto: int = 0
    ) -> None:
        self.dense = dense
        self.verdict = LogVerdict(dense=dense)
        self.heads: dict[str, list[Any]] = {}  # aggregate -> [is_thread, version, hash]
        self.leaves: list[bytes] = []
        self.late: list[tuple[int, str, int, str]] = []
        self.purged = purged or {}
        self._purged_positions = sorted(self.purged)
        self.leaves_upto = leaves_upto

    def _account_purged(self, summary: RangeSummary) -> None:
        """Take the purged positions out of the summary's gaps, their leaves in."""
        positions, limit, leaves = self._purged_positions, self.leaves_upto, summary.leaves
        parts: list[bytes] = []
        gaps: list[tuple[int, int]] = []
        taken, cursor = 0, summary.after + 1
        for start, end in summary.gaps:
            present = max(0, min(start - 1, limit) - cursor + 1)  # rows before the gap
            parts.append(leaves[taken * 32 : (taken + present) * 32])
            taken += present
            rest = start
            for position in positions[bisect_left(positions, start) : bisect_right(positions, end)]:
                if position > rest:
                    gaps.append((rest, position - 1))
                if position <= limit:
                    parts.append(self.purged[position])
                self.verdict.purged += 1
                rest = position + 1
            if rest <= end:
                gaps.append((rest, end))
            cursor = end + 1
        parts.append(leaves[taken * 32 :])
        summary.leaves, summary.gaps = b"".join(parts), gaps

    def add(self, summary: RangeSummary) -> None:
        if self.purged and summary.gaps:
            self._account_purged(summary)
        verdict, heads, suspects = self.verdict, self.heads, self.verdict.suspects
        verdict.events += summary.events
        verdict.thread_events += summary.thread_events
        verdict.head = max(verdict.head, summary.upto)
        for aggregate_id, position in summary.suspects.items():
            suspects.setdefault(aggregate_id, position)
        for aggregate_id, span in summary.spans.items():
            is_thread, first, first_prev, first_position, last, last_hash = span[:6]
            head = heads.get(aggregate_id)
            if head is None:
                if first != 1:
                    suspects.setdefault(aggregate_id, first_position)
                heads[aggregate_id] = [is_thread, last, last_hash]
                continue
            if first != head[1] + 1 or is_thread is not head[0] or first_prev != head[2]:
                suspects.setdefault(aggregate_id, first_position)
            head[1], head[2] = last, last_hash
        verdict.gaps.extend(summary.gaps)
        self.leaves.append(summary.leaves)
        self.late.extend(summary.late)

    def finish(self, diagnoses: Iterable[Problem] = ()) -> LogVerdict:
        """The verdict, with the problems found by diagnosing each suspect."""
        verdict = self.verdict
        verdict.aggregates = len(self.heads)
        verdict.threads = sum(1 for head in self.heads.values() if head[0])
        verdict.gaps = _joined(verdict.gaps)
        verdict.problems.extend(diagnoses)
        if self.dense:
            for after, upto in verdict.gaps:
                where = f"position {after}" if after == upto else f"positions {after}-{upto}"
                verdict.problems.append(
                    Problem(
                        MISSING,
                        f"{where} of the log hold no event: this store numbers events "
                        "without gaps, so events there were deleted",
                        position=after,
                        until=upto if upto != after else None,
                    )
                )
        return verdict


def _joined(gaps: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for after, upto in sorted(gaps):
        if after > upto:
            continue
        if out and after <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(upto, out[-1][1]))
        else:
            out.append((after, upto))
    return out
