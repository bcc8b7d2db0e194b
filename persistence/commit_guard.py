"""A condition checked, and written, in the same statement as a commit of events.

A run claims its thread's lease before any node code runs. A run that records
its input or answer first can claim it in that very commit, and a run can
record its end, and let its thread go, in the commit of its last step: on
PostgreSQL the recorder prefixes its insert with the guard's common table
expressions, and inserts the events only if the one named `guard` yields a row
(once per row: it yields one, or none). Expressions `after` the insert may read
the notification ids it gave, as `appended (id)`. One statement, one round trip, one
transaction: the guard's writes and the events commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class CommitGuard:
    """`ctes`: SQL common table expressions (without WITH), one of them named `guard`
    (yielding at most one row), with `%s` placeholders for `params`. `applied`: the
    recorder checked it and the events were written (a recorder that knows no guards
    leaves it False)."""

    ctes: str
    params: Sequence[Any]
    after: str = ""  # more expressions, after `appended (id)`: the ids the insert gave
    after_params: Sequence[Any] = ()
    applied: bool = False


class CommitRefusedError(Exception):
    """The guard yielded no row: nothing was written."""

    def __init__(self, guard: CommitGuard) -> None:
        super().__init__("the commit's guard did not hold; nothing was written")
        self.guard = guard
