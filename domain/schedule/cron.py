"""A cron: a run asked for on a schedule, as its events tell it.

Who scheduled it, what it runs and when are recorded when it is made (`CronScheduled`),
each change (`CronUpdated`) and its end (`CronDeleted`) with who made them. Each time
it is due, one `CronFired` names the due time, the run it starts and the thread that
run is on: appended at the cron's next version, so that of several schedulers (server
processes) seeing it due at once exactly one fires it. A firing whose run was never
started (its scheduler died between the two) is taken up once, by one scheduler, as
`CronRunRecovered`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import InvalidScheduleError
from domain.schedule.cron_expression import parse

CRON_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/crons")
CHANGEABLE = ("schedule", "timezone", "end_time", "enabled", "payload", "metadata")


def cron_uuid(cron_id: str) -> UUID:
    return uuid5(CRON_NAMESPACE, cron_id)


def next_run(
    schedule: str, timezone: str | None, end_time: str | None, after: datetime
) -> datetime | None:
    """When a schedule is next due after `after`: None once past its end time."""
    due = parse(schedule, timezone).next_after(after)
    if end_time is not None and due > datetime.fromisoformat(end_time):
        return None
    return due


def check_end_time(end_time: Any) -> str | None:
    if end_time is None:
        return None
    try:
        moment = datetime.fromisoformat(str(end_time).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidScheduleError(f"end_time {end_time!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise InvalidScheduleError(f"end_time {end_time!r} names no time zone")
    return moment.isoformat()


class Cron(Aggregate):
    class CronScheduled(Aggregate.Created):
        cron_id: str
        graph_id: str
        thread_id: str | None  # None: each run on a thread of its own
        schedule: str
        timezone: str | None
        end_time: str | None
        payload: dict[str, Any]  # the run asked for: input, config, context, stream_mode...
        metadata: dict[str, Any]
        enabled: bool
        actor: dict[str, Any]
        key_id: str | None  # the maker's key: revoked, the cron stops firing

    class CronUpdated(Aggregate.Event):
        changes: dict[str, Any]
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            for name, value in self.changes.items():
                setattr(aggregate, name, value)

    class CronFired(Aggregate.Event):
        due_at: str
        fired_at: str  # by the scheduler's clock: later than `due_at` after a pause
        run_id: str
        thread_id: str

        def apply(self, aggregate: Any) -> None:
            aggregate.last_fired = self

    class CronRunRecovered(Aggregate.Event):
        """A firing whose run was never started (its scheduler died between the two),
        taken up by another scheduler, which starts that run."""

        run_id: str
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.recovered_run_id = self.run_id

    class CronDeleted(Aggregate.Event):
        actor: dict[str, Any]

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = True

    @staticmethod
    def create_id(cron_id: str) -> UUID:
        return cron_uuid(cron_id)

    def __init__(
        self,
        cron_id: str,
        graph_id: str,
        thread_id: str | None,
        schedule: str,
        timezone: str | None,
        end_time: str | None,
        payload: dict[str, Any],
        metadata: dict[str, Any],
        enabled: bool,
        actor: dict[str, Any],
        key_id: str | None,
    ) -> None:
        self.cron_id = cron_id
        self.graph_id = graph_id
        self.thread_id = thread_id
        self.schedule = schedule
        self.timezone = timezone
        self.end_time = end_time
        self.payload = payload
        self.metadata = metadata
        self.enabled = enabled
        self.scheduled_by = actor
        self.key_id = key_id
        self.deleted = False
        self.last_fired: Cron.CronFired | None = None
        self.recovered_run_id: str | None = None

    def next_due(self) -> datetime | None:
        """When it is next due: after its last firing's due time (or the time it fired, if
        later: a firing late by an hour is not followed by the hour's firings), or its
        making; None
        if disabled, deleted or past its end time."""
        if self.deleted or not self.enabled:
            return None
        after = self.created_on
        if self.last_fired is not None:  # times missed while no scheduler ran are skipped
            fired = self.last_fired
            after = max(
                datetime.fromisoformat(fired.due_at), datetime.fromisoformat(fired.fired_at)
            )
        return next_run(self.schedule, self.timezone, self.end_time, after)

    def update(self, changes: dict[str, Any], actor: dict[str, Any]) -> None:
        """Change what it runs or when; a change to the values it has records nothing."""
        unknown = sorted(set(changes) - set(CHANGEABLE))
        if unknown:
            raise InvalidScheduleError(f"{unknown[0]!r} of a cron cannot be changed")
        changed = {k: v for k, v in changes.items() if getattr(self, k) != v}
        if "schedule" in changed or "timezone" in changed:
            parse(changed.get("schedule", self.schedule), changed.get("timezone", self.timezone))
        if changed:
            self.trigger_event(self.CronUpdated, changes=changed, actor=actor)

    def fire(self, now: datetime, run_id: str, thread_id: str) -> None:
        """Record that it fired at `now` for its next due time, starting `run_id`."""
        due = self.next_due()
        if due is None or due > now:
            raise InvalidScheduleError(f"cron {self.cron_id!r} is not due at {now.isoformat()}")
        self.trigger_event(
            self.CronFired,
            due_at=due.isoformat(),
            fired_at=now.isoformat(),
            run_id=run_id,
            thread_id=thread_id,
        )

    def recover(self, run_id: str, actor: dict[str, Any]) -> None:
        """Record that its last firing's run, never started, is taken up (once)."""
        fired = self.last_fired
        if fired is None or fired.run_id != run_id or self.recovered_run_id == run_id:
            raise InvalidScheduleError(
                f"run {run_id!r} is not a firing of {self.cron_id!r} to take up"
            )
        self.trigger_event(self.CronRunRecovered, run_id=run_id, actor=actor)

    def delete(self, actor: dict[str, Any]) -> None:
        if not self.deleted:
            self.trigger_event(self.CronDeleted, actor=actor)
