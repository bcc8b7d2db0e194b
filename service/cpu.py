"""Run this process on one CPU: `holdpoint serve --cpu N` (Linux).

Python runs one thread at a time. A server's threads (the event loop, the runs, the
store's) pass the interpreter between them thousands of times a second, and the system
schedules a woken thread on whichever core is idle: each hand-over then moves the
working set from one core's caches to the other's. Kept on one core, the same hand-overs
cost far less: on SQLite, where the store works inside the server, the refund cycle over
HTTP takes about a fifth less of the server's CPU (bench/design_choices.md). The CPU
is chosen by whoever deploys: two servers on one machine each want their own.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from domain.errors import HoldpointError

TASKS = Path("/proc/self/task")


class CpuError(HoldpointError):
    """The process cannot run on the CPU asked for."""


def run_on_cpu(cpu: int) -> None:
    """Keep every thread of this process, and every thread it starts, on `cpu`."""
    if not hasattr(os, "sched_setaffinity"):
        msg = "Choosing a CPU (--cpu) needs Linux: this system cannot pin a process"
        raise CpuError(msg)
    allowed = sorted(os.sched_getaffinity(0))
    if cpu not in allowed:
        msg = f"CPU {cpu} is not one this process may run on: {', '.join(map(str, allowed))}"
        raise CpuError(msg)
    pin_threads({cpu})


def pin_threads(cpus: set[int]) -> None:
    """Every thread of this process on `cpus`; the threads they start inherit them."""
    for task in TASKS.iterdir():
        with suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task.name), cpus)
