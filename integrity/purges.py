"""What the recorded purges took out of the log, as `holdpoint verify` accounts for it.

Each `ThreadsPurged` lists the positions it removed with their Merkle leaves
(`domain.retention.purge_ledger`). A purge is made right after a seal that
covers what it removes, so a listed position past that seal is a record that
does not hold: a purge forged to hide deleted events would need it.
"""

from __future__ import annotations

from domain.integrity.whole_log import FORGED, Problem
from domain.record.application import Workflows
from domain.retention.retention import Retention


def purged_leaves(store: Workflows) -> tuple[dict[int, bytes], list[Problem]]:
    """The leaf of each purged position, and the problems of the purge records."""
    leaves: dict[int, bytes] = {}
    problems: list[Problem] = []
    for record in Retention(store).purges():
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
