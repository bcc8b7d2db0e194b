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
from typing import TYPE_CHECKING, Any, Protocol

from bench.backends import Side, scratch_dir
from bench.stats import median

if TYPE_CHECKING:
    from bench.report import Stats

Progress = Callable[[str], None]


class Measure(Protocol):
    """One repetition of a benchmark on one side, on a fresh store."""

    def __call__(self, side: Side, *, warm_up: bool) -> Stats:
        """Measure ``side``; ``warm_up`` asks for a small, untimed workload."""


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
    reps: int = 3


QUICK = Settings(
    threads=30,
    warmup_threads=5,
    loop_steps=100,
    state_lengths=(100, 1_000),
    state_calls=5,
    storage_steps=100,
    reps=1,
)


@contextmanager
def fresh_saver(side: Side, backend: str) -> Iterator[Any]:
    """Open a new, empty checkpointer of ``backend`` ("memory" or "sqlite")."""
    with scratch_dir() as directory:
        if backend == "memory":
            opener = side.memory()
        else:
            opener = side.sqlite(directory / "bench.db")
        with opener as saver:
            yield saver


class Runner:
    """Runs measurements on every side, recording failures instead of stopping."""

    def __init__(self, sides: list[Side], settings: Settings, progress: Progress) -> None:
        """Measure ``sides`` with workload ``settings``, reporting to ``progress``."""
        self.sides = sides
        self.settings = settings
        self.progress = progress
        self.errors: list[str] = []

    def attempt(
        self,
        label: str,
        measure: Measure,
        side: Side,
        *,
        warm_up: bool,
    ) -> Stats | None:
        """Return ``measure(side, warm_up=...)``, or None after recording the error."""
        try:
            return measure(side, warm_up=warm_up)
        except Exception:
            text = f"{side.name}, {label}:\n{traceback.format_exc()}"
            self.errors.append(text)
            self.progress(f"ERROR in {text}")
            return None

    def compare(
        self, label: str, measure: Measure, reps: int | None = None, *, variants: bool = False
    ) -> dict[str, Stats | None]:
        """Warm up, then ``reps`` repetitions per side; medians of each statistic.

        Variant sides run only with ``variants``. A side that raises is left out
        from then on (its result is None).
        """
        reps = self.settings.reps if reps is None else reps
        sides = [side for side in self.sides if variants or not side.variant]
        self.progress(f"{label}: warm-up")
        runs: dict[str, list[Stats]] = {
            side.name: []
            for side in sides
            if self.attempt(label, measure, side, warm_up=True) is not None
        }
        for rep in range(reps):
            order = sides if rep % 2 == 0 else sides[::-1]
            for side in (s for s in order if s.name in runs):
                gc.collect()
                self.progress(f"{label}: {side.name}, repetition {rep + 1}/{reps}")
                stats = self.attempt(label, measure, side, warm_up=False)
                if stats is None:
                    del runs[side.name]
                else:
                    runs[side.name].append(stats)
        out: dict[str, Stats | None] = {side.name: None for side in sides}
        for name, stats_list in runs.items():
            out[name] = {key: median([stats[key] for stats in stats_list]) for key in stats_list[0]}
        return out
