"""How the benchmarks are run: workload sizes, fresh stores, repetitions.

Method, shared by all benchmarks: one process, one thread at a time, a fresh
store per repetition, a warm-up before timing, ``gc.collect()`` between
repetitions, sides alternating in order from one repetition to the next, and
the median over repetitions of each per-repetition statistic.
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from bench.backends import Side, scratch_dir
from bench.stats import median

if TYPE_CHECKING:
    from bench.postgres import Server
    from bench.report import Stats

Progress = Callable[[str], None]


class Measure(Protocol):
    """One repetition of a benchmark on one side, on a fresh store."""

    def __call__(self, side: Side, *, warm_up: bool) -> Stats:
        """Measure ``side``; ``warm_up`` asks for a small, untimed workload."""


class Job(Protocol):
    """One repetition of a benchmark on something already chosen (a side, a baseline)."""

    def __call__(self, *, warm_up: bool) -> Stats:
        """Measure; ``warm_up`` asks for a small, untimed workload."""


class BenchError(RuntimeError):
    """A side returned something other than what the graph must produce."""


def check(*, ok: bool, what: str, got: object) -> None:
    """Raise :class:`BenchError` unless ``ok``: a side gave a wrong result."""
    if not ok:
        message = f"{what}; got {got!r}"
        raise BenchError(message)


@dataclass(frozen=True)
class Settings:
    """Sizes of the workloads."""

    threads: int = 300
    warmup_threads: int = 20
    loop_steps: int = 1_000
    state_lengths: tuple[int, int] = (1_000, 10_000)
    state_calls: int = 20
    storage_steps: int = 1_000
    message_size: int = 200
    writers: int = 8
    writer_cycles: int = 100
    writer_loop_steps: int = 100
    writer_rows: int = 800
    langgraph_writer_cycles: int = 25
    reps: int = 3
    saver_reps: int = 5  # bench/saver.py's speed: costs are differences of times, noisier


QUICK = Settings(
    threads=30,
    warmup_threads=5,
    loop_steps=100,
    state_lengths=(100, 1_000),
    state_calls=5,
    storage_steps=100,
    writer_cycles=10,
    writer_loop_steps=20,
    writer_rows=80,
    langgraph_writer_cycles=5,
    reps=1,
    saver_reps=1,
)

BACKENDS = ("memory", "sqlite", "postgres")


@contextmanager
def fresh_saver(side: Side, backend: str, server: Server | None = None) -> Iterator[Any]:
    """Open a new, empty checkpointer of ``backend`` ("memory", "sqlite" or "postgres").

    "postgres" needs the ``server``.
    """
    if backend == "postgres":
        if server is None or side.postgres is None:
            message = f"{side.name}: no PostgreSQL server or no PostgreSQL store"
            raise BenchError(message)
        with side.postgres(server) as saver:
            yield saver
        return
    with scratch_dir() as directory:
        if backend == "memory":
            opener = side.memory()
        else:
            opener = side.sqlite(directory / "bench.db")
        with opener as saver:
            yield saver


class Runner:
    """Runs measurements on every side, recording failures instead of stopping.

    ``server`` is the PostgreSQL server, or None with the reason in
    ``postgres_skipped``: the "postgres" backend is then skipped.
    """

    def __init__(
        self,
        sides: list[Side],
        settings: Settings,
        progress: Progress,
        server: Server | None = None,
        postgres_skipped: str | None = None,
    ) -> None:
        """Measure ``sides`` with workload ``settings``, reporting to ``progress``."""
        self.sides = sides
        self.settings = settings
        self.progress = progress
        self.server = server
        self.postgres_skipped = postgres_skipped or (
            "no PostgreSQL server given" if server is None else None
        )
        self.errors: list[str] = []

    def skipped(self, backend: str) -> str | None:
        """Return, briefly, why ``backend`` is not measured in this run, or None.

        The full reason goes in the report's header.
        """
        if backend != "postgres" or self.postgres_skipped is None:
            return None
        return "no PostgreSQL (see the header)"

    def attempt(self, label: str, name: str, job: Job, *, warm_up: bool) -> Stats | None:
        """Return ``job(warm_up=...)``, or None after recording the error."""
        try:
            return job(warm_up=warm_up)
        except Exception:
            text = f"{name}, {label}:\n{traceback.format_exc()}"
            self.errors.append(text)
            self.progress(f"ERROR in {text}")
            return None

    def alternate(
        self, label: str, jobs: dict[str, Job], reps: int | None = None
    ) -> dict[str, Stats | None]:
        """Warm up, then ``reps`` repetitions of each job; medians of each statistic.

        The order of the jobs alternates from one repetition to the next. A job
        that raises is left out from then on (its result is None).
        """
        reps = self.settings.reps if reps is None else reps
        self.progress(f"{label}: warm-up")
        runs: dict[str, list[Stats]] = {
            name: []
            for name, job in jobs.items()
            if self.attempt(label, name, job, warm_up=True) is not None
        }
        names = list(jobs)
        for rep in range(reps):
            order = names if rep % 2 == 0 else names[::-1]
            for name in (n for n in order if n in runs):
                gc.collect()
                self.progress(f"{label}: {name}, repetition {rep + 1}/{reps}")
                stats = self.attempt(label, name, jobs[name], warm_up=False)
                if stats is None:
                    del runs[name]
                else:
                    runs[name].append(stats)
        out: dict[str, Stats | None] = dict.fromkeys(names)
        for name, stats_list in runs.items():
            out[name] = {key: median([stats[key] for stats in stats_list]) for key in stats_list[0]}
        return out

    def compare(
        self,
        label: str,
        measure: Measure,
        reps: int | None = None,
        *,
        variants: bool = False,
        extra: dict[str, Job] | None = None,
    ) -> dict[str, Stats | None]:
        """Warm up, then ``reps`` repetitions per side; medians of each statistic.

        Variant sides run only with ``variants``; the ``extra`` jobs (a baseline) take
        turns with the sides. A side that raises is left out from then on (its result
        is None).
        """
        sides = [side for side in self.sides if variants or not side.variant]
        jobs = {side.name: partial(measure, side) for side in sides}
        return self.alternate(label, {**jobs, **(extra or {})}, reps)
