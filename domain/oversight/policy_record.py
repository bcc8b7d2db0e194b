"""The record of the oversight policy in force: one aggregate of fixed id for the store.

Its first event, `OversightPolicyRecorded`, records the whole set of settings that
govern oversight (separation of duties, each served graph's approvals, amount field
and default interrupt deadline beside its digest, the rubber-stamp floor, the
retention floor, the custom roles), the SHA-256 of its canonical JSON and the operator
who started the process; each later change, `OversightPolicyChanged`, records the whole
set again. The aggregate's version is the policy's version: a decision names the version
it was made under (`policy_version` on `InterruptResumed` and `InterruptApproved`), and
this record says what that version was. The use cases are in
`domain.oversight.policy_records`.
"""

from __future__ import annotations

from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

OVERSIGHT_POLICY_ID = uuid5(NAMESPACE_URL, "https://holdpoint.dev/oversight-policy")


class OversightPolicy(Aggregate):
    """The oversight settings in force, each version with its digest and operator."""

    class OversightPolicyRecorded(Aggregate.Created):
        """The oversight settings first recorded: the whole set, its digest, the operator."""

        policy: dict[str, Any]
        digest: str
        actor: dict[str, Any] | None

    class OversightPolicyChanged(Aggregate.Event):
        """The oversight settings changed: the whole set now in force, its digest."""

        policy: dict[str, Any]
        digest: str
        actor: dict[str, Any] | None

        def apply(self, aggregate: Any) -> None:
            aggregate.policy = self.policy
            aggregate.digest = self.digest
            aggregate.recorded_by = self.actor

    @staticmethod
    def create_id() -> UUID:
        return OVERSIGHT_POLICY_ID

    def __init__(self, policy: dict[str, Any], digest: str, actor: dict[str, Any] | None) -> None:
        self.policy = policy
        self.digest = digest
        self.recorded_by = actor
