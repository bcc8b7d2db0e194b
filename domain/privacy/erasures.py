"""The register of erasures: each `holdpoint erase --subject` on record.

One aggregate with a fixed id holds them all, so that the oversight of erasures is
one read. An erasure names the subject by its reference (never its id), the threads
that held the subject's personal values, how many values were sealed there, who
erased and why.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

ERASURES_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/subject-erasures")


class SubjectErasures(Aggregate):
    """`erasures`: each erasure recorded, oldest first."""

    class Opened(Aggregate.Created):
        """The register's first event, recorded with the first erasure."""

    class SubjectErased(Aggregate.Event):
        ref: str  # the subject's reference (domain/privacy/envelopes.subject_ref)
        kid: str | None  # the key destroyed (None: none was kept)
        threads: list[str]
        values: int  # the sealed values that now read as erased
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.erasures.append(
                {
                    "ref": self.ref,
                    "kid": self.kid,
                    "threads": self.threads,
                    "values": self.values,
                    "erased_by": self.actor.get("id"),
                    "reason": self.reason,
                    "erased_at": self.timestamp.isoformat(),
                }
            )

    @classmethod
    def open(cls) -> SubjectErasures:
        return cls._create(cls.Opened, id=ERASURES_ID)

    def __init__(self, **_: Any) -> None:
        self.erasures: list[dict[str, Any]] = []

    def erased(
        self,
        ref: str,
        kid: str | None,
        threads: list[str],
        values: int,
        actor: dict[str, Any],
        reason: str,
    ) -> None:
        self.trigger_event(
            self.SubjectErased,
            ref=ref,
            kid=kid,
            threads=threads,
            values=values,
            actor=actor,
            reason=reason,
        )
