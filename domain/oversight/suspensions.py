"""The use cases of a graph's suspension (domain/oversight/suspension.py): suspend, lift,
and check, before a run or a resume, that the graph may run. Each needs a reason."""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import IntegrityError

from domain.errors import GraphSuspendedError, ReasonRequiredError, SuspensionStateError
from domain.oversight.suspension import GraphSuspension, suspension_uuid
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json


class Suspensions:
    """Suspend a graph, lift its suspension, and check that it may run."""

    def __init__(self, store: Workflows) -> None:
        self.store = store

    def suspend(self, graph_id: str, actor: dict[str, Any], reason: str | None) -> None:
        record = self._read(graph_id)
        if record is not None and record.suspended is not None:
            raise SuspensionStateError(f"Graph {graph_id!r} is suspended already")
        actor, why = (
            to_json(actor, "The actor"),
            reason_given(reason, f"Suspending graph {graph_id!r}"),
        )
        if record is None:
            record = GraphSuspension(graph_id=graph_id, actor=actor, reason=why)
        else:
            record.trigger_event(GraphSuspension.GraphResuspended, actor=actor, reason=why)
        self._save(record)

    def lift(self, graph_id: str, actor: dict[str, Any], reason: str | None) -> None:
        record = self._read(graph_id)
        if record is None or record.suspended is None:
            raise SuspensionStateError(f"Graph {graph_id!r} is not suspended")
        record.trigger_event(
            GraphSuspension.SuspensionLifted,
            actor=to_json(actor, "The actor"),
            reason=reason_given(reason, f"Lifting graph {graph_id!r}'s suspension"),
        )
        self._save(record)

    def suspended(self, graph_id: str) -> dict[str, Any] | None:
        """Who suspended the graph and why, or None if it is not suspended."""
        record = self._read(graph_id)
        return None if record is None else record.suspended

    def check(self, graph_id: str) -> None:
        """GraphSuspendedError if the graph is suspended."""
        suspended = self.suspended(graph_id)
        if suspended is not None:
            raise GraphSuspendedError(graph_id, suspended["by"], suspended["reason"])

    def _read(self, graph_id: str) -> GraphSuspension | None:
        record: GraphSuspension | None = fold_events(
            None, self.store.events.get(suspension_uuid(graph_id))
        )
        return record

    def _save(self, record: GraphSuspension) -> None:
        try:
            self.store.save(record)
        except IntegrityError:  # another writer changed it meanwhile: nothing of ours
            msg = f"Graph {record.graph_id!r}'s suspension changed meanwhile; try again"
            raise SuspensionStateError(msg) from None


def reason_given(reason: str | None, what: str) -> str:
    """The reason, checked: ReasonRequiredError when there is none (an empty one too)."""
    if reason is None or not reason.strip():
        raise ReasonRequiredError(f"{what} needs a reason: say why")
    checked: str = to_json(reason, "The reason")
    return checked
