"""Which seal reaches each event of a thread: the first seal made at or after the event's
position in the log (a seal covers positions 1 to its own), or none yet.

This reads the seals recorded in the store and the positions of the thread's events; it
does not check the log against a seal (`holdpoint verify --seal` and the exported
bundle's proofs do that), so the page says "within the reach of", not "verified".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.integrity.seal import SEAL_REGISTER_ID, SealRegister
from domain.record.application import UNDECODABLE, Workflows
from domain.record.thread_uuids import thread_uuid
from integrity.scan import scanner_for


@dataclass(frozen=True)
class SealMade:
    """One seal of the store: its number (1 the first), the last position it covers, and
    when it was made."""

    number: int
    position: int
    sealed_at: str | None


class SealsUnreadableError(Exception):
    """The store's seal register holds an event that cannot be read."""


def seals_made(store: Workflows) -> list[SealMade]:
    """The store's seals, oldest first."""
    try:
        events = list(store.events.get(SEAL_REGISTER_ID))
    except UNDECODABLE as error:
        msg = f"the recorded seals cannot be read: {error}"
        raise SealsUnreadableError(msg) from None
    seals = [e.seal for e in events if isinstance(e, SealRegister.AuditSealed)]
    return [
        SealMade(number, int(seal.get("position") or 0), seal.get("sealed_at"))
        for number, seal in enumerate(seals, start=1)
    ]


def event_positions(store: Workflows, thread_id: str) -> dict[int, int]:
    """Each of the thread's versions, and its position in the whole log."""
    scanner = scanner_for(store)
    try:
        rows = scanner.aggregate_rows(thread_uuid(thread_id).hex, scanner.head())
    finally:
        scanner.close()
    return {int(row[2]): int(row[0]) for row in rows}


def sealed_by(position: int, seals: list[SealMade]) -> SealMade | None:
    """The first seal whose reach includes `position`, or None."""
    return next((seal for seal in seals if seal.position >= position), None)


def seal_reach(store: Workflows, thread_id: str) -> dict[str, Any]:
    """Per version of the thread: its position and the seal that reaches it (or None);
    and the latest seal. `problem` says why the seals could not be read."""
    try:
        seals = seals_made(store)
    except SealsUnreadableError as error:
        return {"problem": str(error), "latest": None, "versions": {}}
    positions = event_positions(store, thread_id)
    versions = {
        version: {"position": position, "seal": sealed_by(position, seals)}
        for version, position in positions.items()
    }
    return {"problem": None, "latest": seals[-1] if seals else None, "versions": versions}
