"""Every process's share of the deployment's runs: leases renewed, queue, takeovers.

One thread per process (`RunWorker`) does three things, each in the store:

- it renews the leases of the runs this process holds, every third of the
  lease period, in one statement, and stops a run whose lease another runner
  has taken (it may have stalled past its lease);
- it takes runs from the queue (`multitask_strategy: enqueue`, oldest first,
  one thread's runs in order) and runs them;
- it takes over the runs whose runner let its lease expire (the process died,
  or lost the store), and ends them: a run whose input was never recorded
  begins now; a run with nodes left records `RunReclaimed` on its thread (the
  nodes, their task ids, the runners, the lease) and runs those nodes again;
  a run whose nodes all ran has only its end recorded.

It polls every `poll` seconds, and wakes at once when this process queues a
run or a run of it ends. The guarantee (README, "Runs that survive crashes"):
at most one runner at a time per thread; a node runs again only after its
runner's lease expired; a side effect is exactly-once when the node passes its
task id (`get_config()["metadata"]["holdpoint_task_id"]`) as an idempotency key.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from domain.engine.stream_chunks import pending_interrupts
from domain.errors import ConcurrentUpdateError, HoldpointError, ThreadUnreadableError
from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from domain.record.thread_state import RUNNING as RUNNING_THREAD
from persistence.failures import STORE_UNAVAILABLE
from service.run_record import ERROR, INTERRUPTED, SUCCESS
from service.run_store import CANCEL, Expired, RunStore, StoredRun
from service.runs import (
    Begun,
    RunManager,
    ServedGraph,
    error_output,
    new_run,
    request_from,
    run_context,
    with_run_id,
)
from service.wire import output_json

log = structlog.get_logger()
# A takeover recorded on a thread another writer appended to first is tried again on a
# fresh read: a stalled runner's last saves (a real LangGraph graph's, saved in the
# background) may still be landing.
TAKEOVER_ATTEMPTS = 5


class RunWorker:
    """Renews this process's leases, runs queued runs, takes over expired ones."""

    def __init__(
        self,
        runs: RunManager,
        store: Workflows,
        graphs: dict[str, ServedGraph],
        *,
        poll: float,
    ) -> None:
        self.runs = runs
        self.run_store: RunStore = runs.store
        self.store = store
        self.graphs = graphs
        self.poll = poll
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._draining = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="holdpoint-run-worker")
        self._thread.daemon = True
        runs.on_queued = self._wake.set

    def start(self) -> None:
        self._thread.start()

    def drain(self) -> None:
        """Take no more runs (queued or expired); go on renewing this process's leases
        until `stop`, so that no run still running here is taken over meanwhile."""
        self._draining.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    # -- the loop --------------------------------------------------------

    def _loop(self) -> None:
        renew_every = self.runs.lease_ttl / 3
        renewed = time.monotonic()
        while not self._stop.is_set():
            try:
                if time.monotonic() - renewed >= renew_every:
                    self.renew()
                    renewed = time.monotonic()
                if not self._draining.is_set():
                    self.sweep()
            except STORE_UNAVAILABLE as error:
                log.warning("run worker: the store did not answer", error=str(error))
            except Exception:  # the loop must go on: a bug here would strand every run
                log.exception("run worker pass failed")
            self._wake.wait(min(self.poll, renew_every))
            self._wake.clear()

    def renew(self) -> None:
        """Renew the leases of this process's runs; stop those another runner took."""
        held = self.runs.held_runs()
        if not held:
            return
        kept = self.run_store.renew(
            self.runs.owner, [b.record.run_id for b in held], self.runs.lease_ttl
        )
        for begun in held:
            if begun.record.run_id not in kept and not begun.record.done:
                log.warning("run's lease was taken over; it stops", run_id=begun.record.run_id)
                begun.lost = True
        asked = self.run_store.cancel_requests([b.record.run_id for b in held])
        for begun in held:
            request = asked.get(begun.record.run_id)
            if request is not None and begun.cancel is None:
                log.info("run cancelled; it stops at its step's end", run_id=begun.record.run_id)
                self.runs.stop(begun, request)

    def sweep(self) -> None:
        """Take over the expired runs, then run the queued ones this process can."""
        served = list(self.graphs)
        for expired in self.run_store.expired(served):
            taken = self.run_store.take_over(expired, self.runs.owner, self.runs.lease_ttl)
            if taken is not None:
                self._resume(taken, expired)
        while not self._draining.is_set():
            queued = self.run_store.claim_next(self.runs.owner, self.runs.lease_ttl, served)
            if queued is None:
                return
            self._begin_queued(queued)

    # -- running what was claimed ----------------------------------------

    def _begin_queued(self, stored: StoredRun) -> None:
        request = request_from(stored, self.graphs[stored.graph_id])
        try:
            begun = self.runs.begin_claimed(request, stored, refusal_ends_run=True)
        except HoldpointError:
            return  # recorded as the run's end by begin_claimed
        self.runs.submit_rest(begun)

    def _resume(self, stored: StoredRun, expired: Expired) -> None:
        """End a run taken over from a runner whose lease expired."""
        log.warning(
            "taking over a run whose runner's lease expired",
            run_id=stored.run_id,
            previous_runner=expired.owner,
            attempt=stored.attempt,
        )
        try:
            thread = self.store.thread(stored.run_thread_id)
        except ThreadUnreadableError as error:  # its record is damaged: it cannot go on
            self._record_error(stored, error)
            return
        began = thread is not None and _began(self.store, stored)
        request = (stored.output or {}).get(CANCEL)
        if request is not None:  # cancelled while its runner was gone: it runs no more
            self._end_cancelled(stored, thread if began else None, request)
            return
        if thread is None or not began:
            self._begin_queued(stored)  # nothing of it was recorded: it begins now
            return
        if thread.error is not None or not thread.runnable() or thread.status == "cancelled":
            self._record_end(stored, thread)  # its nodes all ran: only its end is missing
            return
        for attempt in range(TAKEOVER_ATTEMPTS):
            try:
                thread.take_over(
                    stored.run_id,
                    self.runs.owner,
                    expired.owner,
                    datetime.fromtimestamp(expired.expired_at, UTC).isoformat(),
                    stored.attempt,
                )
                self.store.record(thread)
                break
            except ConcurrentUpdateError:  # the old runner's last saves were still landing
                if attempt + 1 < TAKEOVER_ATTEMPTS:
                    thread = self.store.thread(stored.run_thread_id) or thread
                    continue
                raise
            except HoldpointError:  # the thread moved on meanwhile (cancelled, say): end it
                now = self.store.thread(stored.run_thread_id)
                assert now is not None, "a thread is never deleted"
                self._record_end(stored, now)
                return
        request = request_from(stored, self.graphs[stored.graph_id])
        run = new_run(
            request.graph,
            with_run_id(request.config, stored.run_id),
            request.stream_modes,
            run_context(request),
        )
        chunks = run.begin(None, thread)
        begun: Begun = self.runs.adopt(request, stored, run, chunks)
        self.runs.submit_rest(begun)

    def _end_cancelled(
        self, stored: StoredRun, thread: WorkflowThread | None, request: dict[str, Any]
    ) -> None:
        """End a cancelled run taken over: RunCancelled if it stopped midway (recorded by
        this runner, as its own would have), then its end, `interrupted`."""
        position = None
        if thread is not None and thread.status == RUNNING_THREAD:
            position = self.store.record_run_cancelled(
                stored.run_thread_id, stored.run_id, request["actor"], request.get("reason")
            )
            thread = self.store.thread(stored.run_thread_id)
        output = {} if thread is None else _output_of(thread)
        self.run_store.finish(
            stored.run_id, stored.run_thread_id, self.runs.owner, INTERRUPTED, output, position
        )

    def _record_error(self, stored: StoredRun, error: Exception) -> None:
        output = error_output(error)
        self.run_store.finish(
            stored.run_id, stored.run_thread_id, self.runs.owner, ERROR, output, None
        )

    def _record_end(self, stored: StoredRun, thread: WorkflowThread) -> None:
        output: dict[str, Any]
        if thread.error is not None:
            status = ERROR
            error = thread.error
            output = {"__error__": {"error": error["type"], "message": error["message"]}}
        else:
            status, output = SUCCESS, _output_of(thread)
        self.run_store.finish(
            stored.run_id,
            stored.run_thread_id,
            self.runs.owner,
            status,
            output,
            None,
        )


def _output_of(thread: WorkflowThread) -> dict[str, Any]:
    """The thread's values and pending interrupts, as a run's output."""
    output = thread.current_values()
    if thread.interrupts:
        output["__interrupt__"] = pending_interrupts(thread)
    found: dict[str, Any] = output_json(output)
    return found


def _began(store: Workflows, stored: StoredRun) -> bool:
    """Whether the run's input or answer was recorded on its thread."""
    return any(
        getattr(event, "run_id", None) == stored.run_id
        for event in store.thread_events(stored.run_thread_id)
    )
