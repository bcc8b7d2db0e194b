"""Load (issue 7, item 5): many clients, several minutes, then an audit of what was written.

A bounded run on loopback only: N concurrent clients (asyncio tasks, each with
an agent's and a reviewer's client of the official async SDK) run refund
cycles against one server for a fixed duration: `threads.create()`,
`runs.wait(input=...)` to the interrupt, `runs.wait(command={"resume": True})`
by the reviewer. Holdpoint runs on a fresh SQLite file and on a fresh
PostgreSQL schema; LangGraph's own server (`langgraph dev`, in-memory) runs
the same cycles in the same run, for comparison. While the load runs, the
benchmark samples Holdpoint's `/readyz` for the read models' lag.

Afterwards, on Holdpoint's store, with the server stopped: every thread a
client started holds exactly the events of one cycle and its hash chain
verifies; the events written equal the events expected; and the oversight
report over the run's period counts exactly the decisions the clients made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from bench.backends import HOLDPOINT, LANGGRAPH, scratch_dir
from bench.harness import QUICK, Runner
from bench.http import (
    HOLDPOINT_POSTGRES,
    REFUND_INPUT,
    Endpoint,
    holdpoint_server,
    langgraph_server,
    percentile,
)
from bench.postgres import drop_schema, new_schema_name
from bench.report import CaseResult, Table, Target
from bench.stats import fmt_ms, fmt_num

SIDES = (HOLDPOINT, HOLDPOINT_POSTGRES, LANGGRAPH)
LAG_SAMPLE_SECONDS = 0.25


@dataclass(frozen=True)
class Sizes:
    clients: int
    seconds: float


def _sizes(runner: Runner) -> Sizes:
    return Sizes(4, 8.0) if runner.settings is QUICK else Sizes(16, 60.0)


@dataclass
class Load:
    """What the clients did and saw."""

    cycles: int = 0
    errors: int = 0
    first_error: str = ""
    latencies_ms: list[float] | None = None
    threads: list[str] | None = None
    lags: list[int] | None = None


async def _client(starter: Any, decider: Any, until: float, load: Load) -> None:
    assert load.latencies_ms is not None
    assert load.threads is not None
    while time.perf_counter() < until:
        try:
            for call in ("create", "run", "resume"):
                started = time.perf_counter()
                if call == "create":
                    thread_id = (await starter.threads.create())["thread_id"]
                    load.threads.append(thread_id)
                elif call == "run":
                    paused = await starter.runs.wait(thread_id, "refund", input=REFUND_INPUT)
                    assert "__interrupt__" in paused, paused
                else:
                    done = await decider.runs.wait(thread_id, "refund", command={"resume": True})
                    assert done.get("approved") is True, done
                load.latencies_ms.append((time.perf_counter() - started) * 1000)
            load.cycles += 1
        except Exception as error:  # counted and reported: the target is zero
            load.errors += 1
            load.first_error = load.first_error or f"{type(error).__name__}: {error}"[:300]


async def _lag_sampler(url: str, until: float, lags: list[int]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        while time.perf_counter() < until:
            ready = await http.get("/readyz")
            lags.append(int(ready.json().get("lag", 0)))
            await asyncio.sleep(LAG_SAMPLE_SECONDS)


async def drive(endpoint: Endpoint, sizes: Sizes, *, sample_lag: bool) -> tuple[Load, float]:
    from langgraph_sdk import get_client  # noqa: PLC0415 - a bench-only dependency

    load = Load(latencies_ms=[], threads=[], lags=[])
    pairs = [
        tuple(get_client(url=endpoint.url, api_key=key) for key in endpoint.client_keys(n))
        for n in range(sizes.clients)
    ]
    started = time.perf_counter()
    until = started + sizes.seconds
    try:
        tasks = [_client(s, d, until, load) for s, d in pairs]
        if sample_lag:
            assert load.lags is not None
            tasks.append(_lag_sampler(endpoint.url, until, load.lags))
        await asyncio.gather(*tasks)
    finally:
        for pair in pairs:
            for client in pair:
                await client.aclose()
    return load, time.perf_counter() - started


def audit(store_url: str, threads: list[str], cycles: int, since: datetime) -> dict[str, Any]:
    """What the store holds after the run, checked against what the clients did."""
    from domain.record.store import open_store  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from projections.oversight_report import oversight_report  # noqa: PLC0415

    with open_store(store_url) as store:
        per_thread = [len(store.thread_events(thread_id)) for thread_id in threads]
        cycle_events = max(per_thread, default=0)
        broken = [t for t in threads if not store.verify_chain(t).ok]
        written = sum(per_thread)
        runner = runner_for(store)
        try:
            runner.catch_up()
            report = oversight_report(
                runner.db, since=since, until=datetime.now(UTC) + timedelta(minutes=1)
            )
        finally:
            runner.close()
    return {
        "events_per_cycle": cycle_events,
        "events_written": written,
        "events_expected": cycles * cycle_events,
        "short_threads": sum(1 for n in per_thread if n != cycle_events),
        "broken_chains": len(broken),
        "report_decisions": report["decisions"]["value"],
    }


def _side_job(side: str, sizes: Sizes, runner: Runner) -> Callable[..., Any]:
    def job(*, warm_up: bool) -> dict[str, Any]:  # noqa: ARG001 - one run, no warm-up
        with scratch_dir() as directory:
            schema = None
            if side == LANGGRAPH:
                server = langgraph_server(directory)
                store_url = ""
            elif side == HOLDPOINT_POSTGRES:
                assert runner.server is not None
                schema = new_schema_name()
                store_url = runner.server.holdpoint_url(schema)
                server = holdpoint_server(store_url, directory, sizes.clients)
            else:
                store_url = f"sqlite:///{directory / 'load.db'}"
                server = holdpoint_server(store_url, directory, sizes.clients)
            try:
                since = datetime.now(UTC) - timedelta(seconds=1)
                with server as endpoint:
                    cpu = endpoint.cpu_seconds()
                    load, wall = asyncio.run(drive(endpoint, sizes, sample_lag=side != LANGGRAPH))
                    cpu = endpoint.cpu_seconds() - cpu
                found = (
                    audit(store_url, load.threads or [], load.cycles, since) if store_url else {}
                )
            finally:
                if schema is not None and runner.server is not None:
                    drop_schema(runner.server, schema)
        return {"load": load, "wall": wall, "cpu": cpu, "audit": found}

    return job


def load_run(runner: Runner) -> CaseResult:
    """Benchmark: sustained refund cycles, then the audit of the store."""
    sizes = _sizes(runner)
    result = CaseResult(
        "load",
        "Load: sustained refund cycles, then an audit of the store",
        f"{sizes.clients} concurrent clients for {sizes.seconds:g} s per side, on loopback: "
        "each an asyncio task with an agent's and a reviewer's `langgraph_sdk` async client "
        "(on Holdpoint, with keys of their own per client: the per-key rate limits, 100 "
        "runs/s by default, apply per client), "
        "running refund cycles (`threads.create`, `runs.wait` with the input, `runs.wait` "
        "with `command={'resume': True}` by the reviewer) until the time is up, each "
        "finishing its cycle. Holdpoint: `holdpoint serve` on a fresh SQLite file and on a "
        "fresh PostgreSQL schema, `/readyz` sampled every "
        f"{LAG_SAMPLE_SECONDS:g} s for the read models' lag (in events); LangGraph: "
        "`langgraph dev` (in-memory), the same cycles, for comparison. Latency: each "
        "request as its client saw it (nearest-rank p50, p99). Afterwards, on Holdpoint's "
        "store: every started thread holds one cycle's events and its chain verifies; "
        "events written = completed cycles x events per cycle; the oversight report over "
        "the run counts exactly one decision per cycle. One repetition: "
        "`python -m bench.run --only load`.",
        [
            Table(
                [
                    "side",
                    "cycles",
                    "cycles/s",
                    "request p50 ms",
                    "request p99 ms",
                    "errors",
                    "lag p99 (events)",
                    "lag max (events)",
                    "server CPU ms/cycle",
                ]
            ),
            Table(
                [
                    "store",
                    "events/cycle",
                    "events written",
                    "expected",
                    "threads not whole",
                    "broken chains",
                    "report decisions",
                ]
            ),
        ],
    )
    for side in SIDES:
        if side == HOLDPOINT_POSTGRES and runner.skipped("postgres"):
            result.tables[0].rows.append([side, "skipped: no PostgreSQL", *[""] * 7])
            continue
        runner.progress(f"load: {side}, {sizes.clients} clients for {sizes.seconds:g} s")
        measured: Any = runner.attempt("load", side, _side_job(side, sizes, runner), warm_up=False)
        if measured is None:
            result.tables[0].rows.append([side, "error, see below", *[""] * 7])
            continue
        load: Load = measured["load"]
        latencies = load.latencies_ms or []
        lags = load.lags or []
        cycles = load.cycles
        result.tables[0].rows.append(
            [
                side,
                f"{cycles:,}",
                fmt_num(cycles / measured["wall"]),
                fmt_ms(percentile(latencies, 0.5)) if latencies else "n/a",
                fmt_ms(percentile(latencies, 0.99)) if latencies else "n/a",
                f"{load.errors}" + (f" ({load.first_error})" if load.errors else ""),
                str(int(percentile([float(x) for x in lags], 0.99))) if lags else "n/a",
                str(max(lags)) if lags else "n/a",
                fmt_num(measured["cpu"] * 1000 / max(cycles, 1)),
            ]
        )
        found = measured["audit"]
        if not found:
            continue
        result.tables[1].rows.append(
            [
                side,
                str(found["events_per_cycle"]),
                f"{found['events_written']:,}",
                f"{found['events_expected']:,}",
                str(found["short_threads"]),
                str(found["broken_chains"]),
                f"{found['report_decisions']:,} of {cycles:,}",
            ]
        )
        whole = (
            load.errors == 0
            and found["events_written"] == found["events_expected"]
            and found["short_threads"] == 0
            and found["broken_chains"] == 0
            and found["report_decisions"] == cycles
        )
        result.targets.append(
            Target(
                f"{side}: no errors, events written = expected, chains verify, "
                "report counts every decision",
                whole,
                f"{load.errors} errors; {found['events_written']:,} of "
                f"{found['events_expected']:,} events; {found['broken_chains']} broken chains; "
                f"report {found['report_decisions']:,} decisions of {cycles:,}",
            )
        )
    return result


LOAD_CASES: dict[str, Callable[[Runner], CaseResult]] = {"load": load_run}
