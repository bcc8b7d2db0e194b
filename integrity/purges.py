"""What the recorded purges took out of the log, as `holdpoint verify` accounts for it.

Each `ThreadsPurged` lists the positions it removed with their Merkle leaves
(`domain.retention.purge_ledger`). A purge is made right after a seal that
covers what it removes, so a purge that names no recorded seal, or lists a
position past its seal, is a record that does not hold: a purge forged to hide
deleted events would need one or the other (the leaves of sealed positions must
match the seals' roots).
"""

from __future__ import annotations

from domain.integrity.seal import SEAL_REGISTER_ID, SealRegister
from domain.integrity.whole_log import FORGED, Problem
from domain.record.application import UNDECODABLE, Workflows
from domain.retention.retention import Retention


def purged_leaves(store: Workflows) -> tuple[dict[int, bytes], list[Problem]]:
    """The leaf of each purged position, and the problems of the purge records."""
    leaves: dict[int, bytes] = {}
    problems: list[Problem] = []
    try:
        purges = Retention(store).purges()
    except UNDECODABLE:  # the scan names the unreadable event; nothing to account by
        return leaves, problems
    sealed = _seal_positions(store) if purges else None
    for record in purges:
        if sealed is not None and record.sealed_at not in sealed:
            problems.append(
                Problem(
                    FORGED,
                    f"purge {record.operation} says it was made after a seal at position "
                    f"{record.sealed_at}, and no seal was recorded there",
                    position=record.sealed_at,
                )
            )
        for thread in record.threads:
            for position, leaf in thread["events"]:
                if position > record.sealed_at:
                    problems.append(
                        Problem(
                            FORGED,
                            f"purge {record.operation} lists position {position}, past the seal "
                            f"at {record.sealed_at} that it was made after: a purge removes "
                            "only sealed events",
                            thread_id=thread["thread_id"],
                            position=position,
                        )
                    )
                leaves[position] = bytes.fromhex(leaf)
    return leaves, problems


def _seal_positions(store: Workflows) -> set[object] | None:
    """The positions seals were made at; None if the register cannot be read (the scan
    names its unreadable event)."""
    try:
        events = list(store.events.get(SEAL_REGISTER_ID))
    except UNDECODABLE:
        return None
    return {e.seal.get("position") for e in events if isinstance(e, SealRegister.AuditSealed)}
