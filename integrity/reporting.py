"""Verdicts as text lines (the CLI) and as JSON data (the CLI's --json, the HTTP API)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # not imported at run time: `holdpoint verify` starts without them
    from domain.integrity.bundle import BundleVerdict
    from domain.integrity.whole_log import LogVerdict, Problem
    from integrity.sealing import SealCheck


def problem_line(problem: Problem) -> str:
    """'thread 'x', version 5, position 12: altered: ...'."""
    where = []
    if problem.thread_id is not None:
        where.append(f"thread {problem.thread_id!r}")
    elif problem.aggregate_id is not None:
        where.append(f"aggregate {problem.aggregate_id}")
    if problem.version is not None:
        where.append(f"version {problem.version}")
    if problem.position is not None:
        where.append(f"position {problem.position}")
    place = ", ".join(where) or "the log"
    return f"{place}: {problem.kind}: {problem.detail}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'s' * (number != 1)}"


def ranges_text(numbers: list[int]) -> str:
    parts: list[list[int]] = []
    for number in sorted(numbers):
        if parts and number == parts[-1][1] + 1:
            parts[-1][1] = number
        else:
            parts.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def verdict_lines(verdict: LogVerdict) -> list[str]:
    others = verdict.aggregates - verdict.threads
    lines = [
        f"Checked {_count(verdict.events, 'event')} at positions 1-{verdict.head:,}: "
        f"{_count(verdict.threads, 'thread')} ({_count(verdict.thread_events, 'event')}, every "
        f"hash chain recomputed) and {_count(others, 'other aggregate')} (keys, refusals, "
        "seals: versions and order)."
    ]
    if verdict.purged:
        lines.append(
            f"{verdict.purged:,} positions were emptied by recorded purges (ThreadsPurged, "
            "`holdpoint retention apply`): accounted for, not missing; their recorded leaves "
            "keep the seals made before them computing."
        )
    if verdict.gaps and not verdict.dense:
        lines.append(
            f"{verdict.missing_positions:,} positions hold no event: PostgreSQL skips the ids "
            "of rolled-back inserts, so gaps alone are not evidence (a seal records them)."
        )
    return lines


def seal_lines(check: SealCheck) -> list[str]:
    seal = check.seal
    lines = [
        f"Seal: positions 1-{seal.position:,}, {seal.events:,} events, root "
        f"{seal.document['root']}, made {seal.document['sealed_at']}, key {seal.key_id} "
        f"(trusted by {check.trusted_by})."
    ]
    if check.signature_problem is None:
        lines.append("Signature: OK.")
    else:
        lines.append(f"Signature: FAILED: {check.signature_problem}.")
    if not check.problems:
        lines.append("The log up to the seal's position is exactly what was sealed.")
    if check.unsealed:
        lines.append(
            f"{check.unsealed:,} events were recorded after the seal's position: it says nothing "
            "about them (beyond the backdating check); a later seal covers them."
        )
    return lines


def bundle_lines(verdict: BundleVerdict, trusted_by: str) -> list[str]:
    lines = [f"Bundle of thread {verdict.thread_id!r}: {verdict.events} events."]
    seal = verdict.seal
    if seal is not None:
        lines.append(
            f"Seal: positions 1-{seal.position:,}, root {seal.document['root']}, key "
            f"{seal.key_id} (trusted by {trusted_by}): signature "
            + (
                "OK."
                if verdict.signature_problem is None
                else f"FAILED: {verdict.signature_problem}."
            )
        )
        lines.append(
            f"Inclusion: {verdict.sealed} of {verdict.events} events proven in the sealed log."
        )
    elif verdict.signature_problem is not None:
        lines.append(f"Seal: FAILED: {verdict.signature_problem}.")
    if verdict.unsealed_versions:
        lines.append(
            f"NOT SEALED: versions {ranges_text(verdict.unsealed_versions)} are checked as a chain "
            "only; no seal proves they were not rewritten or forged."
        )
    return lines


def verdict_data(verdict: LogVerdict) -> dict[str, Any]:
    return {
        "ok": verdict.ok,
        "events_checked": verdict.events,
        "thread_events_checked": verdict.thread_events,
        "threads_checked": verdict.threads,
        "aggregates_checked": verdict.aggregates,
        "head": verdict.head,
        "gaps": [list(gap) for gap in verdict.gaps],
        "purged_positions": verdict.purged,
        "problems": [asdict(problem) for problem in verdict.problems],
    }


def seal_data(check: SealCheck) -> dict[str, Any]:
    return {
        "ok": check.ok,
        "position": check.seal.position,
        "events": check.seal.events,
        "root": check.seal.document["root"],
        "key_id": check.seal.key_id,
        "trusted_by": check.trusted_by,
        "signature_problem": check.signature_problem,
        "unsealed_events": check.unsealed,
        "problems": [asdict(problem) for problem in check.problems],
    }


def bundle_data(verdict: BundleVerdict, trusted_by: str) -> dict[str, Any]:
    return {
        "ok": verdict.ok,
        "thread_id": verdict.thread_id,
        "events": verdict.events,
        "sealed": verdict.sealed,
        "unsealed_versions": verdict.unsealed_versions,
        "key_id": verdict.seal.key_id if verdict.seal is not None else None,
        "trusted_by": trusted_by,
        "signature_problem": verdict.signature_problem,
        "problems": [asdict(problem) for problem in verdict.problems],
    }
