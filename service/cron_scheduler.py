"""The scheduler: fires the crons that are due and starts their runs, in every server
process at once.

Each pass asks the crons' read model for those due by now, and fires each through its
own events (`domain/schedule/crons.py`): of several processes, one records `CronFired`
and starts the run it names, as the cron's maker (the actor recorded on the cron); the
others find it fired. The run is an ordinary run of the store's queue: `enqueue` by
default, so that a cron due while its thread runs waits its turn. A run the thread
refuses (a thread paused at an interrupt takes no new input) is logged, and the cron
goes on to its next time. A firing whose run is not in the store a minute later (its
scheduler died between recording the firing and starting the run) is taken up, once, by
another scheduler (`CronRunRecovered`), which starts that very run; should its own
scheduler only have been slow, the run store lets one of the two record the run, and the
other logs that it was started elsewhere.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import structlog

from domain.access.keyring import Keyring
from domain.engine.runtime import REQUEST_KEY
from domain.errors import CronChangedError, CronNotFoundError, HoldpointError, UnknownKeyError
from domain.oversight.suspensions import Suspensions
from domain.record.application import Workflows
from domain.schedule.crons import Crons, Firing
from projections.cron_index import CronIndex
from service.assistant_catalog import Found, run_config
from service.errors import RunExistsError
from service.read_models import ReadModels
from service.reservations import Reservations
from service.runs import RunManager, RunRequest, ServedGraph

log = structlog.get_logger()
# What a cron's run may say, as LangGraph's crons take it; anything else is refused when
# the cron is made (api/http/routes/crons.py), never taken and ignored.
RUN_FIELDS = ("input", "config", "context", "metadata", "multitask_strategy", "webhook")
SCHEDULER = {"id": "holdpoint-scheduler", "role": "system", "authenticated": False, "via": "cron"}
REVOKED = "the key that made it was revoked or has expired"
# A firing whose run is still not in the store this long after (its scheduler died between
# the two) is taken up by another; firings older than RECOVER_WITHIN are not looked at.
RECOVER_AFTER, RECOVER_WITHIN = timedelta(seconds=60), timedelta(hours=1)


class Services(Protocol):
    """What the scheduler uses of the server's services (service/services.py)."""

    store: Workflows
    keyring: Keyring
    read_models: ReadModels
    runs: RunManager
    reservations: Reservations

    def assistant(self, name_or_assistant_id: str, version: int | None = None) -> Found: ...

    def graph_of(self, found: Found) -> ServedGraph: ...

    def watch_run(self, run_id: str, url: str) -> None: ...


class CronScheduler:
    def __init__(self, services: Services, poll: float = 1.0) -> None:
        self.services = services
        self.poll = poll
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="holdpoint-crons", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            try:
                self.run_once()
            except Exception:  # the next pass tries again; a bug is logged, not fatal
                log.exception("cron pass failed")

    def run_once(self, now: datetime | None = None) -> list[Firing]:
        """A pass: fire the crons due by `now` (default: the clock's), then take up the
        firings whose run never started; the firings this process won."""
        moment = now or datetime.now(UTC)
        return self.fire_due(moment) + self.recover_stranded(moment)

    def fire_due(self, moment: datetime) -> list[Firing]:
        """Fire every cron due by `moment` and start its run; the firings this process won."""
        crons = Crons(self.services.store)
        won = []
        for cron_id in CronIndex(self.services.read_models.db).due(moment):
            if self._maker_revoked(crons, cron_id) or self._graph_suspended(crons, cron_id):
                continue
            firing = crons.fire(cron_id, moment)
            if firing is not None:
                won.append(firing)
                self.start_firing(firing)
        return won

    def recover_stranded(self, moment: datetime) -> list[Firing]:
        """Take up each firing recorded a minute or more before `moment` whose run is not
        in the store, and start that run; the firings this process took up."""
        crons = Crons(self.services.store)
        index = CronIndex(self.services.read_models.db)
        won = []
        for cron_id, run_id in index.fired_between(moment - RECOVER_WITHIN, moment - RECOVER_AFTER):
            if self.services.runs.store.get(run_id) is not None:
                continue  # started, as it should be
            taken = crons.recover(cron_id, run_id, SCHEDULER)
            if taken is not None:
                log.warning("cron run recovered", cron_id=cron_id, run_id=run_id)
                won.append(taken)
                self.start_firing(taken)
        return won

    def _maker_revoked(self, crons: Crons, cron_id: str) -> bool:
        """Whether the key that made the cron was revoked since; if so, the cron is
        disabled on record, by the scheduler, saying why: a revoked key's authority does
        not live on in its schedules."""
        try:
            cron = crons.get(cron_id)
        except CronNotFoundError:
            return True
        if cron.key_id is None:
            return False
        try:
            revoked = not self.services.keyring.get(cron.key_id).valid  # revoked or expired
        except UnknownKeyError:
            revoked = True
        if revoked:
            with contextlib.suppress(CronChangedError, CronNotFoundError):
                crons.update(cron_id, {"enabled": False}, SCHEDULER | {"reason": REVOKED})
            log.warning("cron disabled", cron_id=cron_id, why=REVOKED)
        return revoked

    def _graph_suspended(self, crons: Crons, cron_id: str) -> bool:
        """Whether the cron's graph is suspended: then it fires nothing, and stays due, to
        fire once when the suspension is lifted (as times missed while no server ran)."""
        try:
            graph_id = crons.get(cron_id).graph_id
        except CronNotFoundError:
            return True
        return Suspensions(self.services.store).suspended(graph_id) is not None

    def start_firing(self, firing: Firing) -> None:
        """Start a firing's run, as its cron's maker; a refusal is logged."""
        cron, services = firing.cron, self.services
        try:
            services.runs.start(run_request(services, firing))
        except RunExistsError:  # a scheduler that took the firing up, while this one was slow
            log.info("cron run started elsewhere", cron_id=cron.cron_id, run_id=firing.run_id)
            return
        except HoldpointError as error:
            log.warning(
                "cron run refused",
                cron_id=cron.cron_id,
                run_id=firing.run_id,
                thread_id=firing.thread_id,
                error=str(error),
            )
            return
        services.reservations.drop(firing.thread_id)
        webhook = cron.payload.get("webhook")
        if webhook:
            services.watch_run(firing.run_id, webhook)
        log.info(
            "cron fired", cron_id=cron.cron_id, run_id=firing.run_id, due_at=str(firing.due_at)
        )


def run_request(services: Services, firing: Firing) -> RunRequest:
    """The run a firing starts: the cron's input, config and context, as its maker."""
    cron, payload = firing.cron, firing.cron.payload
    assistant = services.assistant(payload.get("assistant_id") or cron.graph_id)
    graph = services.graph_of(assistant)
    user_config, context = run_config(
        assistant, dict(payload.get("config") or {}), payload.get("context")
    )
    configurable = {
        **(user_config.get("configurable") or {}),
        "thread_id": firing.thread_id,
        "actor": cron.scheduled_by,
        REQUEST_KEY: {"action": "cron", "target": firing.thread_id},
    }
    reserved = services.reservations.get(firing.thread_id)  # made over HTTP, never run
    metadata = {
        **(reserved.metadata if reserved is not None else {}),
        **cron.metadata,
        **(payload.get("metadata") or {}),
        **assistant.run_keys(),
    }
    config: dict[str, Any] = {"configurable": configurable, "metadata": metadata}
    if "recursion_limit" in user_config:
        config["recursion_limit"] = user_config["recursion_limit"]
    return RunRequest(
        graph=graph,
        thread_id=firing.thread_id,
        input=payload.get("input"),
        config=config,
        stream_modes=("values",),
        assistant_id=assistant.assistant_id,
        metadata={
            **metadata,
            "graph_id": graph.graph_id,
            "assistant_id": assistant.assistant_id,
            "cron_id": cron.cron_id,
        },
        kwargs={
            "input": payload.get("input"),
            "config": payload.get("config") or {},
            "context": payload.get("context") or {},
            "stream_mode": ["values"],
            "webhook": payload.get("webhook"),
            "cron_id": cron.cron_id,
        },
        multitask_strategy=payload.get("multitask_strategy") or "enqueue",
        context=context,
        run_id=firing.run_id,
    )
