"""The oversight policy on record: recorded when the settings in force change, read back
by version.

A server (and `holdpoint worker`) records the policy it starts with; an unchanged policy
records nothing, so several processes started at once with the same settings record it
once: the one that loses the race reads the record again, finds it equal and takes its
version. Processes started with different settings each record theirs when they start,
and each decision names the version its process was under.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import IntegrityError

from domain.oversight.policy_record import OVERSIGHT_POLICY_ID, OversightPolicy
from domain.record.application import Workflows, fold_events
from domain.record.hashing import canonical_json, to_json

ATTEMPTS = 3  # another process recording at the same moment: read again, compare again


@dataclass(frozen=True)
class PolicyVersion:
    """One version of the oversight policy on record."""

    version: int
    digest: str
    policy: dict[str, Any]
    recorded: bool = False  # whether the call that returned it recorded it


def policy_digest(policy: dict[str, Any]) -> str:
    """The SHA-256 of the policy's canonical JSON, as `sha256:<hex>`."""
    return "sha256:" + hashlib.sha256(canonical_json(policy).encode()).hexdigest()


def record_policy(
    store: Workflows, policy: dict[str, Any], actor: dict[str, Any] | None
) -> PolicyVersion:
    """The version on record of `policy` (plain JSON), recorded first unless it is the
    version in force already."""
    wanted = to_json(policy, "The oversight policy")
    digest = policy_digest(wanted)
    for _ in range(ATTEMPTS):
        record = _read(store)
        if record is not None and record.digest == digest:
            return PolicyVersion(record.version, digest, record.policy)
        who = to_json(actor, "The actor")
        if record is None:
            record = OversightPolicy(policy=wanted, digest=digest, actor=who)
        else:
            record.trigger_event(
                OversightPolicy.OversightPolicyChanged, policy=wanted, digest=digest, actor=who
            )
        try:
            store.save(record)
        except IntegrityError:  # recorded by another process meanwhile: compare again
            continue
        return PolicyVersion(record.version, digest, wanted, recorded=True)
    msg = "The oversight policy changed on record by other processes meanwhile, three times"
    raise RuntimeError(msg)


def policy_in_force(store: Workflows) -> PolicyVersion | None:
    """The policy last recorded; None before any was."""
    return _version_of(_read(store))


def policy_at(store: Workflows, version: int) -> PolicyVersion | None:
    """The policy as recorded at `version` (what a decision naming it was made under);
    None if there is no such version."""
    if version < 1:
        return None
    record = _read(store, version)
    return None if record is None or record.version != version else _version_of(record)


def _version_of(record: OversightPolicy | None) -> PolicyVersion | None:
    return None if record is None else PolicyVersion(record.version, record.digest, record.policy)


def _read(store: Workflows, version: int | None = None) -> OversightPolicy | None:
    events = store.events.get(OVERSIGHT_POLICY_ID, lte=version)
    record: OversightPolicy | None = fold_events(None, events)
    return record
