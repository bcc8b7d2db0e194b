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
from dataclasses import dataclass
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
from integrity.scan import Scanner, scanner_for
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
        rows = thread_rows(scanner, thread_id, head)
    finally:
        scanner.close()
    document = latest_seal(store)
    check_seal_key(document, key)
    if document is None:
        _, problems = verify_thread_events(store, thread_id)
        return (None, problems) if problems else (thread_bundle(thread_id, rows, None, key), [])
    verified, problems = verify_against_seal(store, document, head, jobs=jobs, progress=progress)
    if verified is None:
        return None, problems
    return thread_bundle(thread_id, rows, verified, key), []


@dataclass(frozen=True)
class VerifiedLog:
    """The log up to `head`, verified against the latest seal (`document`): the tree
    that every thread's inclusion proofs are cut from, built once."""

    document: dict[str, Any]
    seal: Seal
    head: int
    gaps: list[tuple[int, int]]
    tree: MerkleTree

    def proofs(self, rows: list[Any]) -> dict[int, Proof]:
        """The inclusion proof of each of `rows` the seal covers, by position."""
        proofs = {}
        for row in rows:
            position = row[0]
            if position <= self.seal.position:
                index = present_before(position, self.gaps)
                path = self.tree.inclusion_proof(index)
                proofs[position] = (index, [node.hex() for node in path])
        return proofs


def thread_rows(scanner: Scanner, thread_id: str, head: int) -> list[Any]:
    """The thread's rows up to `head`; ThreadNotFoundError if it has none."""
    rows = scanner.aggregate_rows(thread_uuid(thread_id).hex, head)
    if not rows or not any(row[3] in THREAD_TOPICS for row in rows):
        raise ThreadNotFoundError(thread_id)
    return rows


def check_seal_key(document: dict[str, Any] | None, key: Ed25519PrivateKey | None) -> None:
    """SealKeyError unless `key` (if any) signed the latest seal `document` (if any): a
    check refuses what is signed by one key and sealed by another."""
    if key is None or document is None or document.get("public_key") == public_hex(key):
        return
    msg = (
        f"the key of {KEY_VARIABLE} ({key_id(public_hex(key))}) did not sign the latest "
        f"seal (key {document.get('key_id')}), and a check refuses a bundle whose head "
        "and seal are signed by different keys: run `holdpoint seal` with it, then export"
    )
    raise SealKeyError(msg)


def verify_against_seal(
    store: Workflows,
    document: dict[str, Any],
    head: int,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[VerifiedLog | None, list[Problem]]:
    """Verify the whole log up to `head` and against the seal `document`: the verified
    log, or None with the problems found."""
    problems = _seal_problems(document)
    if problems:
        return None, problems
    seal = Seal.from_document(document)
    plan = ScanPlan(leaves_upto=seal.position)
    scan = scan_log(store, plan=plan, jobs=jobs, progress=progress, upto=head)
    problems = scan.verdict.problems + compare(store, seal, scan)
    if problems:
        return None, problems
    gaps = scan.verdict.gaps
    present = present_before(seal.position + 1, gaps)
    return VerifiedLog(document, seal, head, gaps, MerkleTree(scan.leaves[: present * 32])), []


def thread_bundle(
    thread_id: str,
    rows: list[Any],
    verified: VerifiedLog | None,
    key: Ed25519PrivateKey | None,
) -> dict[str, Any]:
    """The thread's bundle, with proofs against the verified log's seal (if any) and,
    given `key`, its head signed as exported now."""
    exported_at = datetime.now(UTC)
    signed = None if key is None else sign(head_statement(thread_id, rows, exported_at), key)
    if verified is None:
        return build_bundle(thread_id, rows, None, {}, exported_at, signed)
    proofs = verified.proofs(rows)
    return build_bundle(thread_id, rows, verified.document, proofs, exported_at, signed)


def _seal_problems(document: dict[str, Any]) -> list[Problem]:
    try:
        Seal.from_document(document)
    except SealFormatError as error:
        return [Problem(FORGED, f"the latest recorded seal is malformed: {error}")]
    problem = signature_problem(document)
    return [] if problem is None else [Problem(FORGED, f"the latest recorded seal: {problem}")]


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
