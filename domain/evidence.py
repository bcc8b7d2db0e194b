"""Evidence bundles: one thread's record, self-contained, checkable with no database.

A bundle holds the thread's events exactly as stored (`stored`: the stored
JSON text), each with its position in the log and, where a seal covers it,
the Merkle inclusion proof that ties it to the seal's signed root; the seal
itself; and, for the reader, the graph, its digest and the decisions with
the reviewers' identities. Every readable section is recomputed from the
events when the bundle is checked, so an edited summary is caught like an
edited event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.diagnosis import decode_state, diagnose, reference_transcoder
from domain.errors import HoldpointError
from domain.integrity import ALTERED, FORGED, Problem, Row, event_name
from domain.merkle import leaf_data, leaf_hash, verify_inclusion
from domain.seal import Seal, SealFormatError
from domain.thread import thread_uuid

BUNDLE_FORMAT = "holdpoint-evidence/1"
Proof = tuple[int, list[str]]  # (leaf index, sibling hashes from the leaf up)
_EVENT_FIELDS: dict[str, type | tuple[type, ...]] = {
    "position": int,
    "version": int,
    "topic": str,
    "stored": str,
}


class BundleFormatError(HoldpointError, ValueError):
    """The file is not a Holdpoint evidence bundle, or is missing what one must hold."""


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def summary_of(rows: Sequence[Row]) -> dict[str, Any]:
    """The readable sections of a bundle, derived from its events (version order)."""
    transcoder = reference_transcoder()
    graph: dict[str, Any] = {"graph_id": None, "graph_digest": None}
    questions: dict[str, dict[str, Any]] = {}
    decisions: list[dict[str, Any]] = []
    for _, _, version, topic, state in sorted(rows, key=lambda row: row[2]):
        data = decode_state(transcoder, state) or {}
        name, at = event_name(topic), _jsonable(data.get("timestamp"))
        if version == 1:
            graph = {"graph_id": data.get("graph_id"), "graph_digest": data.get("graph_digest")}
        if name == "InterruptRaised":
            questions[str(data.get("interrupt_id"))] = {
                "node": data.get("node"),
                "question": data.get("value"),
                "raised_at": at,
            }
        elif name in ("InterruptResumed", "InterruptExpired"):
            asked = questions.get(str(data.get("interrupt_id")), {})
            decision = {
                "version": version,
                "at": at,
                "interrupt_id": data.get("interrupt_id"),
                "node": asked.get("node"),
                "question": asked.get("question"),
                "raised_at": asked.get("raised_at"),
            }
            if name == "InterruptResumed":
                decision |= {
                    "decision": data.get("decision"),
                    "resume": data.get("resume", data.get("value")),
                    "reason": data.get("reason"),
                    "reviewer": data.get("actor"),
                }
            else:
                decision |= {"decision": "expired", "rule": data.get("rule"), "reviewer": None}
            decisions.append(decision)
    return {**graph, "decisions": decisions}


def build_bundle(
    thread_id: str,
    rows: Sequence[Row],
    seal: dict[str, Any] | None,
    proofs: dict[int, Proof],
    exported_at: datetime,
) -> dict[str, Any]:
    """The bundle of one thread's rows (all of them), with proofs by position."""
    events = []
    for position, _, version, topic, state in sorted(rows, key=lambda row: row[2]):
        try:
            text = state.decode("utf-8")
        except UnicodeDecodeError:
            msg = f"version {version} of thread {thread_id!r} is not UTF-8: verify the store"
            raise BundleFormatError(msg) from None
        leaf_index, path = proofs.get(position, (None, None))
        events.append(
            {
                "position": position,
                "version": version,
                "topic": topic,
                "stored": text,
                "leaf_index": leaf_index,
                "proof": path,
            }
        )
    return {
        "format": BUNDLE_FORMAT,
        "thread_id": thread_id,
        "aggregate_id": thread_uuid(thread_id).hex,
        "exported_at": exported_at.isoformat(),
        **summary_of(rows),
        "seal": seal,
        "events": events,
    }


@dataclass
class BundleVerdict:
    """What checking a bundle found."""

    thread_id: str
    events: int
    sealed: int = 0
    unsealed_versions: list[int] = field(default_factory=list)
    seal: Seal | None = None
    signature_problem: str | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.signature_problem is None and not self.problems


def _rows(bundle: Any) -> tuple[str, list[Row], list[dict[str, Any]]]:
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        msg = f"not a Holdpoint evidence bundle (its format must be {BUNDLE_FORMAT!r})"
        raise BundleFormatError(msg)
    thread_id, entries = bundle.get("thread_id"), bundle.get("events")
    if not isinstance(thread_id, str) or not isinstance(entries, list) or not entries:
        msg = "the bundle names no thread_id, or holds no events"
        raise BundleFormatError(msg)
    aggregate_id = thread_uuid(thread_id).hex
    rows: list[Row] = []
    for number, entry in enumerate(entries, start=1):
        for name, kind in _EVENT_FIELDS.items():
            value = entry.get(name) if isinstance(entry, dict) else None
            if not isinstance(value, kind) or isinstance(value, bool):
                msg = f"event {number} of the bundle has no valid {name!r}"
                raise BundleFormatError(msg)
        rows.append(
            (
                entry["position"],
                aggregate_id,
                entry["version"],
                entry["topic"],
                entry["stored"].encode(),
            )
        )
    return thread_id, rows, entries


def check_bundle(
    bundle: Any, check_signature: Callable[[dict[str, Any]], str | None]
) -> BundleVerdict:
    """Check a parsed bundle: the chain, each event's inclusion in the sealed log, the
    seal's signature (`check_signature` returns why it fails, or None), the summaries."""
    thread_id, rows, entries = _rows(bundle)
    aggregate_id = rows[0][1]
    verdict = BundleVerdict(thread_id, len(rows))
    problems = verdict.problems
    if bundle.get("aggregate_id") not in (None, aggregate_id):
        problems.append(
            Problem(
                FORGED, "the bundle's aggregate_id is not its thread's", aggregate_id, thread_id
            )
        )
    problems += diagnose(aggregate_id, rows, reference_transcoder())
    if bundle.get("seal") is not None:
        try:
            verdict.seal = Seal.from_document(bundle["seal"])
        except SealFormatError as error:
            verdict.signature_problem = f"the bundle's seal is malformed: {error}"
        else:
            verdict.signature_problem = check_signature(bundle["seal"])
            problems += _inclusion(verdict, verdict.seal, rows, entries)
    else:
        verdict.unsealed_versions = [row[2] for row in rows]
    recomputed = summary_of(rows)
    for name, value in recomputed.items():
        if bundle.get(name) != value:
            problems.append(
                Problem(
                    ALTERED,
                    f"the bundle's {name!r} does not match its events: it was edited",
                    aggregate_id,
                    thread_id,
                )
            )
    return verdict


def _inclusion(
    verdict: BundleVerdict, seal: Seal, rows: list[Row], entries: list[dict[str, Any]]
) -> list[Problem]:
    problems = []
    for (position, aggregate_id, version, topic, state), entry in zip(rows, entries, strict=True):
        index, path = entry.get("leaf_index"), entry.get("proof")
        if position > seal.position:
            verdict.unsealed_versions.append(version)
            continue
        where = (aggregate_id, verdict.thread_id, version, position)
        if not isinstance(index, int) or not isinstance(path, list):
            detail = (
                f"version {version} claims position {position}, inside the sealed log, "
                "but carries no inclusion proof"
            )
            problems.append(Problem(FORGED, detail, *where))
            continue
        try:
            siblings = [bytes.fromhex(node) for node in path]
        except (TypeError, ValueError):
            siblings = []
        leaf = leaf_hash(leaf_data(position, aggregate_id, version, topic, state))
        if verify_inclusion(leaf, index, seal.events, siblings, seal.root):
            verdict.sealed += 1
        else:
            detail = (
                f"version {version} at position {position} is not the event the seal covers "
                "there (its inclusion proof fails): altered since it was sealed"
            )
            problems.append(Problem(ALTERED, detail, *where))
    return problems
