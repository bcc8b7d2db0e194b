"""The use cases of the record's life: set and retire retention policies, place and lift
legal holds, plan a purge, and record one.

Planning is pure: given the policies, the holds, the threads and the time, which
threads are due, since when, and which are kept though due, and why. Removing
events is the store's job (`service.retention`), after the purge is recorded here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from domain.errors import (
    IncidentError,
    LegalHoldError,
    LegalHoldNotFoundError,
    RetentionStateError,
)
from domain.oversight.suspensions import reason_given
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json
from domain.retention.incidents import INCIDENTS_ID, IncidentRegister
from domain.retention.legal_holds import HOLDS_ID, LegalHolds
from domain.retention.policies import POLICIES_ID, RetentionPolicies
from domain.retention.policy import DEFAULT_FLOOR_DAYS, RetentionPolicy
from domain.retention.purge_ledger import LEDGER_ID, PurgeLedger
from domain.retention.scope import Scope, ScopeError, ThreadFacts

A = TypeVar("A", bound=Aggregate)


@dataclass(frozen=True)
class Due:
    """A thread the policies let go: since when, and by which policies."""

    thread: ThreadFacts
    due_at: datetime
    policies: tuple[str, ...]


@dataclass
class Plan:
    """What a purge at `now` would remove (`due`), and what it keeps though due (`kept`:
    each thread with why: a legal hold, a pending interrupt)."""

    now: datetime
    due: list[Due] = field(default_factory=list)
    kept: list[tuple[Due, str]] = field(default_factory=list)


class Retention:
    """Retention policies, legal holds and purges, recorded in `store`."""

    def __init__(self, store: Workflows) -> None:
        self.store = store

    # -- policies ----------------------------------------------------------------

    def policies(self) -> list[RetentionPolicy]:
        book = self._read(POLICIES_ID, RetentionPolicies)
        found = [] if book is None else list(book.policies.values())
        return [RetentionPolicy.from_json(p) for p in sorted(found, key=lambda p: p["name"])]

    def set_policy(
        self, policy: RetentionPolicy, actor: dict[str, Any], reason: str | None
    ) -> None:
        """Make or change the policy of that name."""
        book = self._read(POLICIES_ID, RetentionPolicies) or RetentionPolicies.open()
        book.trigger_event(
            RetentionPolicies.RetentionPolicyAdopted,
            policy=policy.to_json(),
            actor=to_json(actor, "The actor"),
            reason=reason_given(reason, f"Setting the retention policy {policy.name!r}"),
        )
        self._save(book, "The retention policies")

    def retire_policy(self, name: str, actor: dict[str, Any], reason: str | None) -> None:
        book = self._read(POLICIES_ID, RetentionPolicies)
        if book is None or name not in book.policies:
            raise RetentionStateError(f"No retention policy named {name!r} is in force")
        book.trigger_event(
            RetentionPolicies.RetentionPolicyRetired,
            name=name,
            actor=to_json(actor, "The actor"),
            reason=reason_given(reason, f"Retiring the retention policy {name!r}"),
        )
        self._save(book, "The retention policies")

    # -- legal holds ---------------------------------------------------------------

    def holds(self) -> list[dict[str, Any]]:
        """The holds in place, oldest first."""
        register = self._read(HOLDS_ID, LegalHolds)
        return [] if register is None else list(register.holds.values())

    def place_hold(self, scope: str, actor: dict[str, Any], reason: str | None) -> str:
        """Place a hold on `scope` (`thread:ID`, `graph:ID`, `metadata:KEY[=VALUE]`); its id."""
        try:
            parsed = Scope.parse(scope, kinds=("thread", "graph", "metadata"))
        except ScopeError as error:
            raise LegalHoldError(str(error)) from None
        why = reason_given(reason, f"A legal hold on {parsed}")
        register = self._read(HOLDS_ID, LegalHolds) or LegalHolds.open()
        hold_id = f"hold-{register.placed + 1}"
        register.trigger_event(
            LegalHolds.LegalHoldPlaced,
            hold_id=hold_id,
            scope=parsed.to_json(),
            actor=to_json(actor, "The actor"),
            reason=why,
        )
        self._save(register, "The legal holds")
        return hold_id

    def lift_hold(self, hold_id: str, actor: dict[str, Any], reason: str | None) -> None:
        register = self._read(HOLDS_ID, LegalHolds)
        if register is None or hold_id not in register.holds:
            raise LegalHoldNotFoundError(f"No legal hold {hold_id!r} is in place")
        register.trigger_event(
            LegalHolds.LegalHoldLifted,
            hold_id=hold_id,
            actor=to_json(actor, "The actor"),
            reason=reason_given(reason, f"Lifting the legal hold {hold_id}"),
        )
        self._save(register, "The legal holds")

    def holds_on(self, thread: ThreadFacts) -> list[dict[str, Any]]:
        """The holds in place that cover `thread`."""
        return holding(self.holds(), thread)

    # -- purges ----------------------------------------------------------------------

    def plan(
        self, threads: Iterable[ThreadFacts], now: datetime, floor_days: int = DEFAULT_FLOOR_DAYS
    ) -> Plan:
        return plan(self.policies(), self.holds(), threads, now, floor_days)

    def purges(self) -> list[PurgeLedger.ThreadsPurged]:
        """Every purge recorded, oldest first."""
        events = self.store.events.get(LEDGER_ID)
        return [e for e in events if isinstance(e, PurgeLedger.ThreadsPurged)]

    def record_purge(
        self, threads: list[dict[str, Any]], actor: dict[str, Any], sealed_at: int
    ) -> tuple[int, int]:
        """Record `ThreadsPurged` (see `PurgeLedger`): the operation's number, and the
        version of the ledger that records it.

        The holds are read again first: a thread held since the plan was made is refused.
        """
        holds = self.holds()
        for thread in threads:
            facts = thread["facts"]
            if holding(holds, facts):
                msg = f"Thread {facts.thread_id!r} was put under a legal hold meanwhile"
                raise RetentionStateError(msg + ": plan the purge again")
        ledger = self._read(LEDGER_ID, PurgeLedger) or PurgeLedger.open()
        operation = ledger.operations + 1
        recorded = [{k: v for k, v in t.items() if k != "facts"} for t in threads]
        ledger.trigger_event(
            PurgeLedger.ThreadsPurged,
            operation=operation,
            threads=to_json(recorded, "The purged threads"),
            actor=to_json(actor, "The actor"),
            sealed_at=sealed_at,
        )
        self._save(ledger, "The purge ledger")
        return operation, ledger.version

    # -- incidents -------------------------------------------------------------------

    def incidents(self) -> list[dict[str, Any]]:
        """Every incident, oldest first, open or closed."""
        register = self._read(INCIDENTS_ID, IncidentRegister)
        return [] if register is None else list(register.incidents.values())

    def next_incident_id(self) -> str:
        register = self._read(INCIDENTS_ID, IncidentRegister)
        return f"incident-{1 if register is None else register.opened + 1}"

    def record_incident(
        self,
        incident_id: str,
        thread_ids: list[str],
        reason: str,
        actor: dict[str, Any],
        holds: list[str],
        sealed_at: int,
        bundles: list[dict[str, Any]],
    ) -> None:
        """Record an incident opened as `incident_id` (from `next_incident_id`)."""
        register = self._read(INCIDENTS_ID, IncidentRegister) or IncidentRegister.open()
        if incident_id != f"incident-{register.opened + 1}":
            raise IncidentError(f"Another incident was opened meanwhile; open {incident_id} again")
        register.trigger_event(
            IncidentRegister.IncidentOpened,
            incident_id=incident_id,
            thread_ids=thread_ids,
            reason=reason,
            actor=to_json(actor, "The actor"),
            holds=holds,
            sealed_at=sealed_at,
            bundles=to_json(bundles, "The bundles"),
        )
        self._save(register, "The incidents")

    def close_incident(self, incident_id: str, outcome: str | None, actor: dict[str, Any]) -> None:
        register = self._read(INCIDENTS_ID, IncidentRegister)
        found = None if register is None else register.incidents.get(incident_id)
        if register is None or found is None:
            raise IncidentError(f"No incident {incident_id!r} is on record")
        if found["closed"] is not None:
            raise IncidentError(f"Incident {incident_id} was closed already")
        register.trigger_event(
            IncidentRegister.IncidentClosed,
            incident_id=incident_id,
            outcome=reason_given(outcome, f"Closing incident {incident_id}"),
            actor=to_json(actor, "The actor"),
        )
        self._save(register, "The incidents")

    # -- reading and saving ----------------------------------------------------------

    def _read(self, aggregate_id: Any, kind: type[A]) -> A | None:
        found = fold_events(None, self.store.events.get(aggregate_id))
        if found is not None and not isinstance(found, kind):
            raise RetentionStateError(f"The record {aggregate_id} is not a {kind.__name__}")
        return found

    def _save(self, record: Aggregate, what: str) -> None:
        try:
            self.store.save(record)
        except IntegrityError:  # another writer changed it meanwhile: nothing of ours
            raise RetentionStateError(f"{what} changed meanwhile; try again") from None


def holding(holds: list[dict[str, Any]], thread: ThreadFacts) -> list[dict[str, Any]]:
    """The holds of `holds` that cover `thread`."""
    return [h for h in holds if Scope.from_json(h["scope"]).covers(thread)]


def holds_shown(
    holds: list[dict[str, Any]], thread_id: str, graph_id: str, metadata: dict[str, Any]
) -> list[dict[str, Any]]:
    """The holds of `holds` that cover a thread, their scopes as people write them: for the
    pages that show a thread (its outcome and times do not matter to a hold)."""
    thread = ThreadFacts(thread_id, graph_id, "", "", "", metadata, 0)
    return [{**h, "scope": str(Scope.from_json(h["scope"]))} for h in holding(holds, thread)]


def plan(
    policies: list[RetentionPolicy],
    holds: list[dict[str, Any]],
    threads: Iterable[ThreadFacts],
    now: datetime,
    floor_days: int = DEFAULT_FLOOR_DAYS,
) -> Plan:
    """Which threads are due at `now`: the longest of the covering policies decides, and
    none lets a thread go before `floor_days`."""
    result = Plan(now)
    for thread in threads:
        covering = [p for p in policies if p.covers(thread)]
        if not covering:
            continue
        due_at = max(p.due_at(thread, floor_days) for p in covering)
        due = Due(thread, due_at, tuple(p.name for p in covering))
        if due.due_at > now:
            continue
        held = holding(holds, thread)
        if held:
            result.kept.append((due, "legal hold " + ", ".join(h["hold_id"] for h in held)))
        elif thread.pending and thread.status != "cancelled":  # a cancel closes them for good
            result.kept.append((due, f"{thread.pending} interrupt(s) pending"))
        else:
            result.due.append(due)
    return result
