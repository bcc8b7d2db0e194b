"""Runs one after another on one thread while they compute; beside it when one waits.

Graph code runs in worker threads that share one interpreter lock. Runs that
only compute end sooner one after another than side by side: side by side
they take turns on the lock, and every hand-over costs a wait (a run that
comes back from a SQLite call waits for the lock another run holds): see
BENCHMARKS.md, "Design choices, measured", for one thread against a pool.
Yet a node that waits on I/O (a model, a web service), or a run that waits
for its thread's lock, must not hold up every run behind it.

So jobs are taken in order by one thread, the *lead*, and nothing is handed
between threads while it keeps up. Where the lead may wait (graph code, a
thread's lock: the `may_wait` sections), a watchman times it: once a section
has lasted `turn` seconds, the jobs waiting behind the lead, and those that
arrive until its job ends, go to a pool of helper threads and run beside it.
Holdpoint's own work (checking a request, committing events) is not timed:
it computes, and would gain nothing from a second thread.

The watchman is woken only when it sleeps without a deadline. While jobs wait
behind the lead it keeps one (at most a turn ahead) and looks at the lead's
section when it wakes, so under load it wakes about once a turn, not at every
section: each wake-up is a hand-over of the interpreter lock between threads.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import structlog

log = structlog.get_logger()
Job = Callable[[], None]


class RunExecutor:
    """Runs jobs on a lead thread and `workers - 1` helpers, the lead's waits timed by `turn`.

    One worker: the lead alone, jobs in order. A turn of 0: no lead, every job
    goes to a pool of `workers` threads at once (as a plain thread pool).
    """

    def __init__(self, workers: int, turn: float, name: str = "holdpoint-run") -> None:
        self.turn = turn
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the lead waits for a job
        self._watch = threading.Condition(self._lock)  # the watchman waits for a lead's wait
        self._jobs: deque[Job] = deque()
        self._busy = False  # the lead is running a job
        self._waiting_since: float | None = None  # the lead entered a `may_wait` section
        self._timing = False  # the watchman sleeps until a deadline, and will look again
        self._stopping = False
        lead = turn > 0 or workers <= 1
        helpers = workers - 1 if lead else workers
        # Where jobs go now: to the helpers while the lead's job has outlasted a turn
        # (always, with no lead); otherwise in line for the lead.
        self._overran = not lead
        self._helpers = (
            ThreadPoolExecutor(helpers, thread_name_prefix=f"{name}-helper") if helpers else None
        )
        self._lead: threading.Thread | None = None
        self._threads = []
        if lead:
            self._lead = threading.Thread(target=self._run_lead, name=f"{name}-lead")
            self._threads.append(self._lead)
        if lead and self._helpers is not None:
            self._threads.append(threading.Thread(target=self._watchman, name=f"{name}-watch"))
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def submit(self, job: Job) -> None:
        """Run `job` (which handles its own errors) soon; RuntimeError after `shutdown`."""
        with self._lock:
            if self._stopping:
                msg = "cannot submit a run after shutdown"
                raise RuntimeError(msg)
            if self._overran and self._helpers is not None:
                self._helpers.submit(job)
                return
            self._jobs.append(job)
            if not self._busy:
                self._work.notify()
            elif self._waiting_since is not None and not self._timing:
                self._watch.notify()  # a job waits behind a lead that waits: time it

    @contextmanager
    def may_wait(self) -> Iterator[None]:
        """Mark a stretch of a job in which it may wait (graph code, a lock): on the lead,
        a stretch longer than `turn` sends the jobs behind it to the helpers."""
        if threading.current_thread() is not self._lead or self._helpers is None:
            yield
            return
        with self._lock:
            self._waiting_since = time.monotonic()
            if self._jobs and not self._timing:
                self._watch.notify()
        try:
            yield
        finally:
            with self._lock:
                self._waiting_since = None

    def shutdown(self) -> None:
        """Run the jobs submitted so far, then stop the threads."""
        with self._lock:
            self._stopping = True
            self._work.notify_all()
            self._watch.notify_all()
        for thread in self._threads:
            thread.join()
        if self._helpers is not None:
            self._helpers.shutdown(wait=True)

    def _run_lead(self) -> None:
        while True:
            with self._lock:
                self._busy = False
                self._overran = False
                while not self._jobs and not self._stopping:
                    self._work.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                self._busy = True
            try:
                job()
            except Exception:  # a job handles its own errors; the lead goes on regardless
                log.exception("a run's job failed")

    def _watchman(self) -> None:
        with self._lock:
            while not self._stopping:
                since = self._waiting_since
                if not self._jobs or self._overran:
                    self._timing = False
                    self._watch.wait()
                    continue
                # Jobs wait behind the lead: look again by the end of a turn of its section,
                # or, while it computes, within a turn (a section begun meanwhile is then
                # found before its turn is up).
                left = self.turn if since is None else since + self.turn - time.monotonic()
                if left > 0:
                    self._timing = True
                    self._watch.wait(left)
                    continue
                self._overran = True  # until the lead's job ends
                while self._jobs:
                    self._helpers.submit(self._jobs.popleft())  # type: ignore[union-attr]
