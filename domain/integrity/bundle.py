"""Evidence bundles: one thread's record, self-contained, checkable with no database.

A bundle holds the thread's events exactly as stored (`stored`: the stored
JSON text), each with its position in the log and, where a seal covers it,
the Merkle inclusion proof that ties it to the seal's signed root; the seal
itself; when the exporter held the seal key, a signed statement of the
thread's head as exported (`head`); and, for the reader, the graph, its
digest and the decisions with the reviewers' identities. Every readable
section is recomputed from the events when the bundle is checked, so an
edited summary is caught like an edited event.

An inclusion proof shows that an event is in the sealed log, never that no
later event of the thread is: a bundle with its last events cut off proves
the rest as well as the whole did. Only the signed head, or a sealed final
event (`ThreadCancelled`, after which a thread records nothing), shows that
the bundle ends where the thread did when it was exported (`complete`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.errors import HoldpointError
from domain.integrity.decodable import reference_transcoder
from domain.integrity.diagnosis import decode_state, diagnose
from domain.integrity.merkle import leaf_data, leaf_hash, verify_inclusion
from domain.integrity.seal import Seal, SealFormatError
from domain.integrity.whole_log import ALTERED, FORGED, MISSING, Problem, Row, event_name
from domain.record.thread_uuids import thread_uuid

BUNDLE_FORMAT = "holdpoint-evidence/1"
HEAD_FORMAT = "holdpoint-bundle-head/1"
# Nothing is recorded in a thread after it. Not so ThreadCompleted or ThreadFailed: new
# input, a retry or a human's edit may follow them.
FINAL_EVENT = "ThreadCancelled"
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


def head_statement(thread_id: str, rows: Sequence[Row], exported_at: datetime) -> dict[str, Any]:
    """The statement, to sign with the seal key, that the thread's head was its last row
    (that event, at that position) when it was exported at `exported_at`."""
    position, aggregate_id, version, topic, state = max(rows, key=lambda row: row[2])
    return {
        "format": HEAD_FORMAT,
        "thread_id": thread_id,
        "aggregate_id": aggregate_id,
        "version": version,
        "position": position,
        "leaf": leaf_hash(leaf_data(position, aggregate_id, version, topic, state)).hex(),
        "exported_at": exported_at.isoformat(),
    }


def build_bundle(
    thread_id: str,
    rows: Sequence[Row],
    seal: dict[str, Any] | None,
    proofs: dict[int, Proof],
    exported_at: datetime,
    head: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The bundle of one thread's rows (all of them), with proofs by position and, if
    given, the signed `head_statement` of the same rows and `exported_at`."""
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
        "head": head,
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
    last_version: int = 0
    last_event: str = ""
    head: dict[str, Any] | None = None  # the signed head statement, when it holds and matches
    # What shows that the bundle ends where the thread did when exported: "signed head",
    # "final event", or None (nothing does: its last events may have been cut off).
    complete: str | None = None

    @property
    def ok(self) -> bool:
        """Nothing the bundle holds was found altered, forged or missing. Not that it
        proves much: see `covered` and `complete`."""
        return self.signature_problem is None and not self.problems

    @property
    def covered(self) -> bool:
        """Every event is proven in the sealed log, by a seal whose signature holds:
        without that, the events are a hash chain that whoever edits the file recomputes."""
        return (
            self.seal is not None and self.signature_problem is None and self.sealed == self.events
        )


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
    last = max(rows, key=lambda row: row[2])
    verdict.last_version, verdict.last_event = last[2], event_name(last[3])
    if bundle.get("head") is not None:
        problems += _head_problems(verdict, bundle, last, check_signature)
    if verdict.covered and not problems:
        if verdict.head is not None:
            verdict.complete = "signed head"
        elif verdict.last_event == FINAL_EVENT:
            verdict.complete = "final event"
    return verdict


def _versions_were(first: int, last: int) -> str:
    return f"version {first} was" if first == last else f"versions {first}-{last} were"


def _head_problems(
    verdict: BundleVerdict,
    bundle: dict[str, Any],
    last: Row,
    check_signature: Callable[[dict[str, Any]], str | None],
) -> list[Problem]:
    """The signed head against the bundle's last event; sets `verdict.head` if it holds."""
    head, thread_id = bundle["head"], verdict.thread_id
    position, aggregate_id, version, topic, state = last
    seal = verdict.seal

    def problem(kind: str, detail: str, named: int | None = None) -> list[Problem]:
        detail = f"the bundle's signed head: {detail}"
        return [Problem(kind, detail, aggregate_id, thread_id, named)]

    if not isinstance(head, dict) or head.get("format") != HEAD_FORMAT:
        return problem(FORGED, f"not a head statement (its format must be {HEAD_FORMAT!r})")
    why = check_signature(head)
    if why is not None:
        return problem(FORGED, why)
    if seal is not None and head.get("public_key") != seal.document["public_key"]:
        return problem(FORGED, f"signed by key {head.get('key_id')}, the seal by {seal.key_id}")
    if (head.get("thread_id"), head.get("aggregate_id")) != (thread_id, aggregate_id):
        return problem(FORGED, "it names another thread")
    if head.get("exported_at") != bundle.get("exported_at"):
        return problem(ALTERED, "the bundle's 'exported_at' is not the time it states: edited")
    signed = head.get("version")
    if not isinstance(signed, int) or isinstance(signed, bool):
        return problem(FORGED, "it names no version")
    if signed > version:
        detail = (
            f"the thread's head was version {signed} when exported, and the bundle ends at "
            f"version {version}: {_versions_were(version + 1, signed)} cut from its end"
        )
        return problem(MISSING, detail, signed)
    if signed < version:
        detail = (
            f"the thread's head was version {signed} when exported: "
            f"{_versions_were(signed + 1, version)} added to the bundle since"
        )
        return problem(FORGED, detail, version)
    leaf = leaf_hash(leaf_data(position, aggregate_id, version, topic, state)).hex()
    if (head.get("position"), head.get("leaf")) != (position, leaf):
        detail = f"version {version} is not the event, or not at the position, it signed"
        return problem(ALTERED, detail, version)
    verdict.head = head
    return []


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
