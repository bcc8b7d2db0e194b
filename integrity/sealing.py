"""Making seals, finding the latest, and checking the log against one.

`make_seal` verifies the whole log (and the log against the latest seal,
if there is one) before it signs anything: a seal over a tampered log would
bless the tampering, so on any problem it records nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import structlog
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from domain.access.actor import local_actor
from domain.errors import HoldpointError
from domain.integrity.seal import (
    SEAL_REGISTER_ID,
    Seal,
    SealedLog,
    SealFormatError,
    SealRegister,
    check_against_seal,
    inserted_positions,
    present_before,
    seal_statement,
)
from domain.integrity.whole_log import ALTERED, FORGED, Problem
from domain.record.application import Workflows
from integrity.ranges import ScanPlan
from integrity.scan import Scanner, scanner_for
from integrity.signing import sign, signature_problem
from integrity.verify_log import LogScan, Progress, scan_log, with_thread_ids

DEFAULT_SKEW = timedelta(minutes=5)
log = structlog.get_logger()


class NothingToSealError(HoldpointError):
    """The store holds no events yet."""


class SealConflictError(HoldpointError):
    """Another seal was recorded while this one was being made."""


@dataclass
class SealCheck:
    """The log checked against one seal."""

    seal: Seal
    trusted_by: str  # what vouches for the key: "--public-key", the signing key, or the seal
    signature_problem: str | None
    problems: list[Problem] = field(default_factory=list)
    unsealed: int = 0  # events after the seal's position

    @property
    def ok(self) -> bool:
        return self.signature_problem is None and not self.problems


def load_seal_file(path: str) -> Seal:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        msg = f"cannot read the seal file {path}: {error.strerror}"
        raise SealFormatError(msg) from None
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        msg = f"the seal file {path} is not JSON: {error}"
        raise SealFormatError(msg) from None
    try:
        return Seal.from_document(document)
    except SealFormatError as error:
        msg = f"the seal file {path}: {error}"
        raise SealFormatError(msg) from None


def latest_seal(store: Workflows) -> dict[str, Any] | None:
    """The document of the latest seal recorded in the store, or None."""
    rows = store.recorder.select_events(SEAL_REGISTER_ID, desc=True, limit=1)
    if not rows:
        return None
    try:
        event = store.mapper.to_domain_event(rows[0])
    except Exception as error:  # whatever the store holds there, it is no seal
        msg = f"the latest recorded seal cannot be read: {error}"
        raise SealFormatError(msg) from None
    seal = getattr(event, "seal", None)
    return seal if isinstance(seal, dict) else None


def _inserted(
    scanner: Scanner, seal: Seal, gaps: list[tuple[int, int]]
) -> list[tuple[int, str, int]]:
    found = []
    for after, upto in inserted_positions(seal, gaps):
        for rows in scanner.batches(after - 1, upto):
            found += [(row[0], row[1], row[2]) for row in rows]
    return found


def _name_events(problems: list[Problem], scanner: Scanner) -> list[Problem]:
    """Problems about one changed position, naming the event now there."""
    named = []
    for problem in problems:
        position = problem.position
        one = problem.kind == ALTERED and problem.aggregate_id is None and not problem.until
        rows = []
        if one and position:
            rows = [row for batch in scanner.batches(position - 1, position) for row in batch]
        if rows:
            named.append(replace(problem, aggregate_id=rows[0][1], version=rows[0][2]))
        else:
            named.append(problem)
    return named


def compare(
    store: Workflows, seal: Seal, scan: LogScan, skew: timedelta = DEFAULT_SKEW
) -> list[Problem]:
    """The log's problems relative to `seal`, from a scan that gathered its leaves."""
    verdict = scan.verdict
    present = present_before(seal.position + 1, verdict.gaps)
    leaves = scan.leaves[: max(present, 0) * 32]
    scanner = scanner_for(store)
    try:
        inserted = _inserted(scanner, seal, verdict.gaps)
        sealed_log = SealedLog(verdict.head, verdict.gaps, leaves, scan.late)
        problems = check_against_seal(seal, sealed_log, inserted, skew)
        return with_thread_ids(_name_events(problems, scanner), scanner)
    finally:
        scanner.close()


def verify_with_seal(
    store: Workflows,
    seal: Seal,
    trusted: str | None,
    trusted_by: str,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    skew: timedelta = DEFAULT_SKEW,
) -> tuple[LogScan, SealCheck]:
    """Verify the whole log, and the log against `seal`."""
    plan = ScanPlan(leaves_upto=seal.position, late_after=seal.position)
    scan = scan_log(store, plan=plan, jobs=jobs, progress=progress)
    check = SealCheck(seal, trusted_by, signature_problem(seal.document, trusted))
    check.problems = compare(store, seal, scan, skew)
    check.unsealed = scan.verdict.events + scan.verdict.purged - len(scan.leaves) // 32
    return scan, check


def make_seal(
    store: Workflows,
    key: Ed25519PrivateKey,
    *,
    jobs: int | None = None,
    progress: Progress | None = None,
    actor: dict[str, Any] | None = None,
) -> tuple[dict[str, Any] | None, LogScan, list[Problem]]:
    """Verify the log, then sign and record a seal over it up to its head, by `actor`
    (default: the local user, as for `holdpoint seal`).

    Returns (the seal document or None, the scan, the problems that stopped it).
    """
    sealed_at = datetime.now(UTC)  # before the head is read: see check_against_seal
    scanner = scanner_for(store)
    try:
        head = scanner.head()
    finally:
        scanner.close()
    if head == 0:
        msg = "the store holds no events yet: there is nothing to seal"
        raise NothingToSealError(msg)
    previous = latest_seal(store)
    late_after = previous.get("position") if previous is not None else None
    plan = ScanPlan(
        leaves_upto=head, late_after=late_after if isinstance(late_after, int) else None
    )
    scan = scan_log(store, plan=plan, jobs=jobs, progress=progress, upto=head)
    problems = list(scan.verdict.problems)
    if previous is not None:
        problems += _against_previous(store, previous, scan)
    if problems:
        log.warning("seal refused", problems=len(problems))
        return None, scan, problems
    statement = seal_statement(
        position=head, leaves=scan.leaves, gaps=scan.verdict.gaps, sealed_at=sealed_at
    )
    document = sign(statement, key)
    register: SealRegister
    try:
        register = store.repository.get(SEAL_REGISTER_ID)
    except AggregateNotFoundError:
        register = SealRegister.open()
    register.record_seal(document, actor or local_actor())
    try:
        recordings = store.save(register)
    except IntegrityError:
        msg = "another seal was recorded meanwhile: run `holdpoint seal` again"
        raise SealConflictError(msg) from None
    document["recorded_at"] = recordings[-1].notification.id
    log.info("seal recorded", position=head, events=statement["events"], key=document["key_id"])
    return document, scan, []


def _against_previous(store: Workflows, previous: dict[str, Any], scan: LogScan) -> list[Problem]:
    try:
        seal = Seal.from_document(previous)
    except SealFormatError as error:
        return [Problem(FORGED, f"the latest recorded seal is malformed: {error}")]
    problem = signature_problem(previous)
    if problem is not None:
        return [Problem(FORGED, f"the latest recorded seal does not hold: {problem}")]
    return compare(store, seal, scan)
