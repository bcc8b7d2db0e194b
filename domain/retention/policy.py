"""A retention policy: which threads, counted from when, kept how long, by outcome.

A policy covers a scope (`domain.retention.scope`) and names the outcomes it
lets go (`completed`, `failed`, `cancelled`) after `period_days` counted from
the thread's start or from its end (its last event). A thread with an
interrupt still pending is never let go, whatever a policy says: its hold
point is waiting for a person. Where several policies cover a thread, the
longest keeps it: the thread is due when every one of them lets it go. A
thread no policy covers is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from domain.errors import RetentionPolicyError
from domain.retention.scope import Scope, ScopeError, ThreadFacts

OUTCOMES = ("completed", "failed", "cancelled")
CLOCKS = ("start", "end")
DEFAULT_FLOOR_DAYS = 183  # EU AI Act Art. 19(1) and 26(6): at least six months
NAME_MAX = 64


@dataclass(frozen=True)
class RetentionPolicy:
    name: str
    scope: Scope
    clock: str
    period_days: int
    outcomes: tuple[str, ...]

    @classmethod
    def checked(
        cls,
        name: str,
        scope: str,
        clock: str,
        period_days: int,
        outcomes: list[str] | tuple[str, ...],
        *,
        floor_days: int = DEFAULT_FLOOR_DAYS,
    ) -> RetentionPolicy:
        """A policy from what a person wrote, or RetentionPolicyError saying what is wrong."""
        if not name or len(name) > NAME_MAX or not name.replace("-", "").replace("_", "").isalnum():
            msg = f"A policy's name is 1 to {NAME_MAX} letters, digits, - or _ (got {name!r})"
            raise RetentionPolicyError(msg)
        try:
            parsed = Scope.parse(scope, kinds=("all", "graph", "metadata"))
        except ScopeError as error:
            raise RetentionPolicyError(str(error)) from None
        if clock not in CLOCKS:
            msg = f"The clock {clock!r} is not one of {', '.join(CLOCKS)}"
            raise RetentionPolicyError(msg)
        if isinstance(period_days, bool) or not isinstance(period_days, int):
            raise RetentionPolicyError(
                f"The period is a whole number of days (got {period_days!r})"
            )
        if period_days < floor_days:
            msg = (
                f"A period of {period_days} days is under the floor of {floor_days} days: "
                "logs are kept at least that long (EU AI Act Art. 19 and 26(6); the floor "
                "is `[retention] floor_days` in holdpoint.toml)"
            )
            raise RetentionPolicyError(msg)
        if not outcomes:
            raise RetentionPolicyError(
                f"Name the outcomes the policy lets go: {', '.join(OUTCOMES)}"
            )
        for outcome in outcomes:
            if outcome == "interrupted":
                msg = (
                    "A thread with an open interrupt is never purged (its hold point is still "
                    "waiting for a person): `interrupted` cannot be a policy's outcome"
                )
                raise RetentionPolicyError(msg)
            if outcome not in OUTCOMES:
                msg = f"Unknown outcome {outcome!r}: one of {', '.join(OUTCOMES)}"
                raise RetentionPolicyError(msg)
        kept = tuple(o for o in OUTCOMES if o in outcomes)
        return cls(name, parsed, clock, period_days, kept)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetentionPolicy:
        return cls(
            str(data["name"]),
            Scope.from_json(data["scope"]),
            str(data["clock"]),
            int(data["period_days"]),
            tuple(data["outcomes"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope.to_json(),
            "clock": self.clock,
            "period_days": self.period_days,
            "outcomes": list(self.outcomes),
        }

    def covers(self, thread: ThreadFacts) -> bool:
        """Whether this policy has a say on the thread: its scope and its outcome."""
        return thread.status in self.outcomes and self.scope.covers(thread)

    def due_at(self, thread: ThreadFacts, floor_days: int = DEFAULT_FLOOR_DAYS) -> datetime:
        """When the policy lets the thread go: its period after the clock, or the floor in
        force when that was raised above the period since the policy was adopted."""
        start = thread.created_at if self.clock == "start" else thread.updated_at
        return datetime.fromisoformat(start) + timedelta(days=max(self.period_days, floor_days))
