"""Seals: a signed digest of the whole log up to a position, and checking the log against one.

A seal states: "the log's events at positions 1..`position` were exactly
these": `events` leaves whose Merkle root is `root` (`domain.integrity.merkle`, one leaf
per event as stored, in position order), the positions that held no event
then (`gaps`), and the roots of up to 64 aligned chunks of leaves (`chunks`,
at `chunk_height`), which narrow a mismatch down to a range of positions.
It is signed (Ed25519, outside the domain: `integrity.signing`) over its
canonical JSON without `signature` and `recorded_at`, and recorded in the
store as `SealRegister.AuditSealed`.

Checked against the log now, a seal names the events inserted at positions
that were empty, the positions whose event is gone, and the chunks whose
events changed; and, past its position, the events dated before the seal was
made (a forgery appended later and backdated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import HoldpointError
from domain.integrity.merkle import DIGEST_SIZE, MerkleTree, chunk_height
from domain.integrity.whole_log import ALTERED, FORGED, MISSING, Problem
from domain.record.hashing import canonical_json
from domain.record.topics import keep_topics

SEAL_FORMAT = "holdpoint-seal/1"
MAX_CHUNKS = 64
SEAL_REGISTER_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/seals")
UNSIGNED = frozenset({"signature", "recorded_at"})
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "position": int,
    "events": int,
    "root": str,
    "gaps": list,
    "chunk_height": int,
    "chunks": list,
    "sealed_at": str,
    "public_key": str,
    "key_id": str,
    "signature": str,
}

Ranges = list[tuple[int, int]]


class SealFormatError(HoldpointError, ValueError):
    """A seal document is malformed: not a Holdpoint seal, or a field missing or wrong."""


class SealRegister(Aggregate):
    """The store's seals, in the order they were made (one aggregate, a fixed id)."""

    class Opened(Aggregate.Created):
        """The register's first event, recorded with the first seal."""

    class AuditSealed(Aggregate.Event):
        """A seal was made over the log up to its `position` (the signed document), by
        `actor` (None on seals recorded before who sealed was)."""

        seal: dict[str, Any]
        actor: dict[str, Any] | None = None

        def apply(self, aggregate: Any) -> None:
            aggregate.seals += 1
            aggregate.latest = self.seal

    def __init__(self, **_: Any) -> None:
        self.seals = 0
        self.latest: dict[str, Any] | None = None

    @classmethod
    def open(cls) -> SealRegister:
        return cls._create(cls.Opened, id=SEAL_REGISTER_ID)

    def record_seal(self, seal: dict[str, Any], actor: dict[str, Any]) -> None:
        self.trigger_event(self.AuditSealed, seal=seal, actor=actor)


@dataclass(frozen=True)
class Seal:
    """A seal document, parsed (`from_document`) and checkable."""

    document: dict[str, Any]

    @classmethod
    def from_document(cls, document: Any) -> Seal:
        if not isinstance(document, dict) or document.get("format") != SEAL_FORMAT:
            msg = f"not a Holdpoint seal (its format must be {SEAL_FORMAT!r})"
            raise SealFormatError(msg)
        for name, kind in _FIELDS.items():
            value = document.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                msg = f"the seal's {name!r} is missing or not a {getattr(kind, '__name__', kind)}"
                raise SealFormatError(msg)
        try:
            datetime.fromisoformat(document["sealed_at"])
            bytes.fromhex(document["root"])
            [bytes.fromhex(chunk) for chunk in document["chunks"]]
            [(int(a), int(b)) for a, b in document["gaps"]]
        except (TypeError, ValueError) as error:
            msg = f"the seal has a malformed field: {error}"
            raise SealFormatError(msg) from None
        return cls(document)

    @property
    def position(self) -> int:
        return int(self.document["position"])

    @property
    def events(self) -> int:
        return int(self.document["events"])

    @property
    def root(self) -> bytes:
        return bytes.fromhex(self.document["root"])

    @property
    def gaps(self) -> Ranges:
        return [(int(a), int(b)) for a, b in self.document["gaps"]]

    @property
    def sealed_at(self) -> datetime:
        return datetime.fromisoformat(self.document["sealed_at"])

    @property
    def key_id(self) -> str:
        return str(self.document["key_id"])

    def signed_bytes(self) -> bytes:
        return statement_bytes(self.document)


def statement_bytes(document: dict[str, Any]) -> bytes:
    """What a seal's signature signs: its canonical JSON, less the unsigned fields."""
    return canonical_json({k: v for k, v in document.items() if k not in UNSIGNED}).encode()


def seal_statement(
    *, position: int, leaves: bytes, gaps: Ranges, sealed_at: datetime
) -> dict[str, Any]:
    """The unsigned statement over a log's leaves up to `position`."""
    tree = MerkleTree(leaves)
    height = chunk_height(tree.size, MAX_CHUNKS)
    return {
        "format": SEAL_FORMAT,
        "position": position,
        "events": tree.size,
        "root": tree.root.hex(),
        "gaps": [[a, b] for a, b in clip(gaps, position)],
        "chunk_height": height,
        "chunks": [node.hex() for node in tree.level(height)],
        "sealed_at": sealed_at.isoformat(),
    }


def clip(ranges: Ranges, upto: int) -> Ranges:
    return [(a, min(b, upto)) for a, b in ranges if a <= upto]


def subtract(ranges: Ranges, minus: Ranges) -> Ranges:
    """The positions in `ranges` and not in `minus` (both sorted, disjoint)."""
    out: Ranges = []
    for start, end in ranges:
        cursor = start
        for a, b in minus:
            if b < cursor or a > end:
                continue
            if a > cursor:
                out.append((cursor, a - 1))
            cursor = max(cursor, b + 1)
        if cursor <= end:
            out.append((cursor, end))
    return out


def present_before(position: int, gaps: Ranges) -> int:
    """How many positions in 1..position-1 hold an event, given the gaps."""
    missing = sum(min(b, position - 1) - a + 1 for a, b in gaps if a < position)
    return position - 1 - missing


def position_of_leaf(index: int, gaps: Ranges) -> int:
    """The position of the `index`-th event (from 0), given the gaps."""
    position = index + 1
    for a, b in gaps:
        if a <= position:
            position += b - a + 1
        else:
            break
    return position


@dataclass(frozen=True)
class SealedLog:
    """What a scan of the log found, for comparing with a seal."""

    head: int
    gaps: Ranges  # positions with no event now, up to the head
    leaves: bytes  # leaf hashes of every event up to the seal's position
    late: Sequence[tuple[int, str, int, str]]  # (position, aggregate, version, timestamp)


def check_against_seal(
    seal: Seal, log: SealedLog, inserted: Sequence[tuple[int, str, int]], skew: timedelta
) -> list[Problem]:
    """Problems of the log relative to `seal`. `inserted`: the events now at positions
    that were gaps when it was made (see `inserted_positions`)."""
    problems: list[Problem] = []
    now_gaps = clip(log.gaps, seal.position)
    if log.head < seal.position:
        now_gaps = [*now_gaps, (log.head + 1, seal.position)]
    for a, b in subtract(now_gaps, seal.gaps):
        where = f"position {a}" if a == b else f"positions {a}-{b}"
        detail = f"{where} held an event when sealed, and now none: deleted"
        problems.append(Problem(MISSING, detail, position=a, until=b if b != a else None))
    for position, aggregate_id, version in inserted:
        problems.append(
            Problem(
                FORGED,
                f"position {position} held no event when sealed; this event was put there "
                "since: inserted into the sealed log",
                aggregate_id,
                version=version,
                position=position,
            )
        )
    size = len(log.leaves) // DIGEST_SIZE
    if not problems and size != seal.events:
        detail = f"the seal covers {seal.events:,} events, the log has {size:,} up to its position"
        problems.append(Problem(MISSING if size < seal.events else FORGED, detail))
    if not problems:
        problems += _changed_chunks(seal, MerkleTree(log.leaves))
    limit = seal.sealed_at - skew
    for position, aggregate_id, version, stamp in log.late:
        moment = datetime.fromisoformat(stamp)
        if moment < limit:
            problems.append(
                Problem(
                    FORGED,
                    f"recorded after the seal (position {seal.position}) but dated {stamp}, "
                    f"before the seal was made ({seal.document['sealed_at']}): backdated",
                    aggregate_id,
                    version=version,
                    position=position,
                )
            )
    return problems


def inserted_positions(seal: Seal, gaps: Ranges) -> Ranges:
    """Positions that were gaps when sealed and hold an event now."""
    return subtract(seal.gaps, clip(gaps, seal.position))


def _changed_chunks(seal: Seal, tree: MerkleTree) -> list[Problem]:
    if tree.root == seal.root:
        return []
    height = int(seal.document["chunk_height"])
    sealed = seal.document["chunks"]
    now = [node.hex() for node in tree.level(height)]
    problems = []
    for index, (then, current) in enumerate(zip(sealed, now, strict=False)):
        if then == current:
            continue
        first = position_of_leaf(index << height, seal.gaps)
        last_leaf = min((index + 1) << height, seal.events) - 1
        last = position_of_leaf(last_leaf, seal.gaps)
        if first == last:
            detail = f"the event at position {first} differs from the one sealed there"
        else:
            detail = f"one or more of the events at positions {first}-{last} differ from the seal"
        problems.append(
            Problem(
                ALTERED,
                f"{detail}: altered, swapped or moved, with hashes recomputed",
                position=first,
                until=last if last != first else None,
            )
        )
    if not problems:
        problems.append(Problem(ALTERED, "the log's Merkle root differs from the seal's"))
    return problems


# Recorded from `domain.seal` before the domain had subpackages; the topics stay.
keep_topics(SealRegister, "domain.seal")
