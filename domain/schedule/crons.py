"""The crons' use cases: schedule, change, delete, and fire one when it is due.

A cron is read from its own events; search and the due ones are the read model's
(`projections/cron_index.py`). Firing is exactly-once: the `CronFired` event is
appended at the cron's next version, and a scheduler that loses that race to another
records nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import uuid4

from eventsourcing.persistence import IntegrityError

from domain.errors import CronChangedError, CronNotFoundError
from domain.record.application import Workflows, fold_events
from domain.record.hashing import to_json
from domain.schedule.cron import Cron, check_end_time, cron_uuid
from domain.schedule.cron_expression import parse


@dataclass(frozen=True)
class Firing:
    """A cron fired: the run to start, on which thread, for which due time."""

    cron: Cron
    run_id: str
    thread_id: str
    due_at: datetime
    position: int | None


class Crons:
    def __init__(self, store: Workflows) -> None:
        self.store = store

    def schedule(
        self,
        *,
        graph_id: str,
        thread_id: str | None,
        schedule: str,
        payload: dict[str, Any],
        actor: dict[str, Any],
        timezone: str | None = None,
        end_time: Any = None,
        metadata: dict[str, Any] | None = None,
        enabled: bool = True,
        key_id: str | None = None,
    ) -> Cron:
        """A new cron, recorded; InvalidScheduleError for a schedule it cannot keep."""
        parse(schedule, timezone)
        cron = Cron(
            cron_id=str(uuid4()),
            graph_id=graph_id,
            thread_id=thread_id,
            schedule=schedule,
            timezone=timezone,
            end_time=check_end_time(end_time),
            payload=to_json(payload, "The cron's run"),
            metadata=to_json(metadata or {}, "The metadata"),
            enabled=enabled,
            actor=to_json(actor, "The actor"),
            key_id=key_id,
        )
        self.store.save(cron)
        return cron

    def get(self, cron_id: str) -> Cron:
        """The cron, or CronNotFoundError (never made, or deleted)."""
        cron = self._read(cron_id)
        if cron is None or cron.deleted:
            raise CronNotFoundError(cron_id)
        return cron

    def update(self, cron_id: str, changes: dict[str, Any], actor: dict[str, Any]) -> Cron:
        cron = self.get(cron_id)
        if "end_time" in changes:
            changes = {**changes, "end_time": check_end_time(changes["end_time"])}
        cron.update(to_json(changes, "The changes"), to_json(actor, "The actor"))
        self._save(cron)
        return cron

    def delete(self, cron_id: str, actor: dict[str, Any]) -> None:
        cron = self.get(cron_id)
        cron.delete(to_json(actor, "The actor"))
        self._save(cron)

    def fire(self, cron_id: str, now: datetime) -> Firing | None:
        """Fire the cron if it is due by `now`; None if it is not, or another scheduler
        fired it first."""
        cron = self._read(cron_id)
        due = None if cron is None else cron.next_due()
        if cron is None or due is None or due > now:
            return None
        thread_id = cron.thread_id or str(uuid4())
        run_id = str(uuid4())
        cron.fire(now, run_id, thread_id)
        try:
            recordings = self.store.save(cron)
        except IntegrityError:
            return None  # another scheduler fired it
        return Firing(cron, run_id, thread_id, due, recordings[-1].notification.id)

    def recover(self, cron_id: str, run_id: str, actor: dict[str, Any]) -> Firing | None:
        """Take up the cron's last firing, whose run `run_id` was never started; None if
        it is not that firing's, or another scheduler took it up first."""
        cron = self._read(cron_id)
        fired = None if cron is None else cron.last_fired
        if cron is None or fired is None or fired.run_id != run_id:
            return None  # not the cron's last firing (it fired again since)
        if cron.recovered_run_id == run_id:
            return None  # taken up already
        cron.recover(run_id, to_json(actor, "The actor"))
        try:
            recordings = self.store.save(cron)
        except IntegrityError:
            return None  # another scheduler took it up
        due = datetime.fromisoformat(fired.due_at)
        return Firing(cron, run_id, fired.thread_id, due, recordings[-1].notification.id)

    def _save(self, cron: Cron) -> None:
        if not cron.pending_events:
            return  # nothing changed: nothing to record
        try:
            self.store.save(cron)
        except IntegrityError:
            raise CronChangedError(cron.cron_id) from None

    def _read(self, cron_id: str) -> Cron | None:
        cron: Cron | None = fold_events(None, self.store.events.get(cron_uuid(cron_id)))
        return cron
