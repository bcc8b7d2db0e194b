"""The retention policies in force, as recorded facts: set (or changed) and retired.

One aggregate with a fixed id holds them all, so that any process reads the
policies in force with one read, and two people changing them at once
cannot both succeed unseen (the second gets a version conflict).
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

POLICIES_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/retention-policies")


class RetentionPolicies(Aggregate):
    """Every retention policy's history: `policies` maps a name to the one in force."""

    class Opened(Aggregate.Created):
        """The book's first event, recorded with the first policy."""

    class RetentionPolicyAdopted(Aggregate.Event):
        """A policy adopted, or changed: the whole policy, as it is now."""

        policy: dict[str, Any]
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.policies[self.policy["name"]] = self.policy

    class RetentionPolicyRetired(Aggregate.Event):
        name: str
        actor: dict[str, Any]
        reason: str

        def apply(self, aggregate: Any) -> None:
            aggregate.policies.pop(self.name, None)

    @classmethod
    def open(cls) -> RetentionPolicies:
        return cls._create(cls.Opened, id=POLICIES_ID)

    def __init__(self, **_: Any) -> None:
        self.policies: dict[str, dict[str, Any]] = {}
