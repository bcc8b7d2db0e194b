"""Exporting a thread's evidence bundle from the store, and checking a bundle file.

An export verifies the whole log against the latest seal first (a bundle
with proofs from a tampered log would prove nothing), then cuts the inclusion
proof of each of the thread's sealed events out of the tree. Checking a
bundle needs the file alone (and, ideally, the trusted public key).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.ranges import ScanPlan
from audit.scan import scanner_for
from audit.seals import compare, latest_seal
from audit.signing import signature_problem
from audit.verify_log import Progress, scan_log, verify_thread_events
from domain.application import Workflows
from domain.errors import ThreadNotFoundError
from domain.evidence import BundleFormatError, BundleVerdict, Proof, build_bundle, check_bundle
from domain.integrity import FORGED, THREAD_TOPICS, Problem
from domain.merkle import MerkleTree
from domain.seal import Seal, SealFormatError, present_before
from domain.thread import thread_uuid


def export_thread(
    store: Workflows,
    thread_id: str,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The thread's bundle, or None with the problems that stopped the export."""
    scanner = scanner_for(store)
    try:
        head = scanner.head()
        rows = scanner.aggregate_rows(thread_uuid(thread_id).hex, head)
    finally:
        scanner.close()
    if not rows or not any(row[3] in THREAD_TOPICS for row in rows):
        raise ThreadNotFoundError(thread_id)
    document = latest_seal(store)
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
    return build_bundle(thread_id, rows, document, proofs, datetime.now(UTC)), []


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
