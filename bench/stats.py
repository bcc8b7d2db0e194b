"""Small statistics and formatting helpers."""

from __future__ import annotations

import gc
import statistics
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

NS_PER_MS = 1_000_000
MB = 1_000_000
KB = 1_000
BIG = 100  # from here on, no decimals
TINY_RATIO = 0.01  # below this, four decimals


def median(values: Sequence[float]) -> float:
    """Return the median of a non-empty sequence."""
    return statistics.median(values)


def timed_calls(call: Callable[[], object], calls: int, warm_up: int = 1) -> list[float]:
    """The times of `calls` calls of `call`, in ms, after `warm_up` untimed calls and a
    garbage collection."""
    for _ in range(warm_up):
        call()
    gc.collect()
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        times.append((time.perf_counter_ns() - start) / NS_PER_MS)
    return times


def median_ms(call: Callable[[], object], calls: int) -> float:
    """The median of `timed_calls`."""
    return median(timed_calls(call, calls))


def p95(values: Sequence[float]) -> float:
    """Return the 95th percentile (inclusive method), or the only value."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[94]


def ms(ns: float) -> float:
    """Convert nanoseconds to milliseconds."""
    return ns / NS_PER_MS


def fmt_ms(value: float) -> str:
    """Format milliseconds: three decimals below 1 ms, two below 100 ms."""
    if value < 1:
        return f"{value:.3f}"
    if value < BIG:
        return f"{value:.2f}"
    return f"{value:.0f}"


def fmt_num(value: float) -> str:
    """Format a rate or a number of seconds."""
    if value >= BIG:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_bytes(value: float) -> str:
    """Format a byte count in MB (10^6 bytes) or KB (10^3 bytes)."""
    if value >= MB:
        return f"{value / MB:.2f} MB"
    return f"{value / KB:.1f} KB"


def fmt_ratio(value: float) -> str:
    """Format a Holdpoint/LangGraph ratio."""
    if value < TINY_RATIO:
        return f"{value:.4f}"
    return f"{value:.2f}"
