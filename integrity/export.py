"""Exporting a thread's evidence bundle from the store, and checking a bundle file.

An export verifies the whole log against the latest seal first (a bundle
with proofs from a tampered log would prove nothing), then cuts the inclusion
proof of each of the thread's sealed events out of the tree and, given the
seal key, signs the thread's head as exported. Checking a bundle needs the
file alone (and, ideally, the trusted public key); `refusals` says what a
bundle in which nothing was found wrong still fails to prove.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import ThreadNotFoundError
from domain.integrity.bundle import (
    FINAL_EVENT,
    BundleFormatError,
    BundleVerdict,
    Proof,
    build_bundle,
    check_bundle,
    head_statement,
)
from domain.integrity.merkle import MerkleTree
from domain.integrity.seal import Seal, SealFormatError, present_before
from domain.integrity.whole_log import FORGED, THREAD_TOPICS, Problem
from domain.record.application import Workflows
from domain.record.thread_uuids import thread_uuid
from integrity.ranges import ScanPlan
from integrity.reporting import ranges_text
from integrity.scan import scanner_for
from integrity.sealing import compare, latest_seal
from integrity.signing import (
    KEY_VARIABLE,
    SealKeyError,
    key_id,
    public_hex,
    sign,
    signature_problem,
)
from integrity.verify_log import Progress, scan_log, verify_thread_events

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def export_thread(
    store: Workflows,
    thread_id: str,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    key: Ed25519PrivateKey | None = None,
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The thread's bundle, or None with the problems that stopped the export. With
    `key`, the seal key, the bundle carries its `head_statement`, signed."""
    scanner = scanner_for(store)
    try:
        head = scanner.head()
        rows = scanner.aggregate_rows(thread_uuid(thread_id).hex, head)
    finally:
        scanner.close()
    if not rows or not any(row[3] in THREAD_TOPICS for row in rows):
        raise ThreadNotFoundError(thread_id)
    document = latest_seal(store)
    if key is not None and document is not None and document.get("public_key") != public_hex(key):
        msg = (
            f"the key of {KEY_VARIABLE} ({key_id(public_hex(key))}) did not sign the latest "
            f"seal (key {document.get('key_id')}), and a check refuses a bundle whose head "
            "and seal are signed by different keys: run `holdpoint seal` with it, then export"
        )
        raise SealKeyError(msg)
    proofs: dict[int, Proof] = {}
    if document is None:
        _, problems = verify_thread_events(store, thread_id)
    else:
        problems = _seal_problems(document)
        if not problems:
            seal = Seal.from_document(document)
            plan = ScanPlan(leaves_upto=seal.position)
            scan = scan_log(store, plan=plan, jobs=jobs, progress=progress, upto=head)
            problems = scan.verdict.problems + compare(store, seal, scan)
            if not problems:
                proofs = _proofs(seal, scan.verdict.gaps, scan.leaves, rows)
    if problems:
        return None, problems
    exported_at = datetime.now(UTC)
    signed = None if key is None else sign(head_statement(thread_id, rows, exported_at), key)
    return build_bundle(thread_id, rows, document, proofs, exported_at, signed), []


def _seal_problems(document: dict[str, Any]) -> list[Problem]:
    try:
        Seal.from_document(document)
    except SealFormatError as error:
        return [Problem(FORGED, f"the latest recorded seal is malformed: {error}")]
    problem = signature_problem(document)
    return [] if problem is None else [Problem(FORGED, f"the latest recorded seal: {problem}")]


def _proofs(
    seal: Seal, gaps: list[tuple[int, int]], leaves: bytes, rows: list[Any]
) -> dict[int, Proof]:
    present = present_before(seal.position + 1, gaps)
    tree = MerkleTree(leaves[: present * 32])
    proofs = {}
    for row in rows:
        position = row[0]
        if position <= seal.position:
            index = present_before(position, gaps)
            proofs[position] = (index, [node.hex() for node in tree.inclusion_proof(index)])
    return proofs


def write_bundle(bundle: dict[str, Any], path: Path) -> None:
    """Write with the json module: it keeps integers of any size, as the events do."""
    path.write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def verify_bundle_file(path: str, trusted: str | None) -> BundleVerdict:
    """Check the bundle in `path`, with no database; `trusted`: the public key to require."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        msg = f"cannot read the bundle {path}: {error.strerror}"
        raise BundleFormatError(msg) from None
    try:
        bundle = json.loads(data)
    except ValueError as error:
        msg = f"the bundle {path} is not JSON: {error}"
        raise BundleFormatError(msg) from None
    try:
        return check_bundle(bundle, lambda document: signature_problem(document, trusted))
    except BundleFormatError as error:
        msg = f"{path}: {error}"
        raise BundleFormatError(msg) from None


def refusals(verdict: BundleVerdict, *, allow_unsealed: bool, require_complete: bool) -> list[str]:
    """Why a bundle is refused even if nothing in it was found wrong: an event that no
    valid seal covers (unless `allow_unsealed`), or, if `require_complete`, nothing that
    shows its last events were not cut off."""
    reasons = []
    seal = verdict.seal
    again = "run `holdpoint seal`, then export again (--allow-unsealed accepts it as it is)"
    unsealed = verdict.unsealed_versions
    if verdict.signature_problem is None and not allow_unsealed:
        if seal is None:
            reasons.append(
                "the bundle holds no seal: its events are checked as a hash chain only, which "
                f"whoever edits the file can recompute; {again}"
            )
        elif unsealed:
            which, them = (
                (f"version {unsealed[0]}", "it")
                if len(unsealed) == 1
                else (f"versions {ranges_text(unsealed)}", "them")
            )
            reasons.append(
                f"no seal covers {which}, at positions after the seal's ({seal.position:,}): "
                f"whoever edits the file can change {them} unseen. If recorded after the seal, "
                + again
            )
    if require_complete and verdict.complete is None:
        reasons.append(
            "--require-complete: nothing shows that the bundle ends where the thread did when "
            "it was exported (see above)"
        )
    return reasons


def completeness_line(verdict: BundleVerdict) -> str:
    """What the bundle shows about the thread's events after its last one."""
    head, last = verdict.head, f"version {verdict.last_version} ({verdict.last_event})"
    if verdict.complete == "signed head" and head is not None:
        return (
            f"Complete as exported: key {head['key_id']} signed that the thread's head was "
            f"{last} when the bundle was exported ({head['exported_at']}); it says nothing of "
            "events recorded since."
        )
    if verdict.complete == "final event":
        return f"Complete: the bundle ends with {last}, sealed; a thread records nothing after it."
    if not verdict.covered:
        why = "its events are not all covered by a valid seal"
    elif not verdict.ok:
        why = "see the problems"
    else:
        why = (
            f"it carries no signed head (export with {KEY_VARIABLE} set), and its last event is "
            f"not {FINAL_EVENT}"
        )
    return (
        f"NOT PROVEN COMPLETE: the bundle ends at {last}; the thread may have later events, and "
        f"the bundle with its last events cut off would look the same ({why})."
    )
