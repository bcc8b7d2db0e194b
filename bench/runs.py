"""Benchmark (issue 21): runs in the store, across processes and after a crash.

`processes`: refund cycles through the official SDK at 16 clients on one
PostgreSQL store, against one `holdpoint serve` and against two (client n talks to
server n mod 2, as a round-robin balancer would send it), with LangGraph's own
server (`langgraph dev`, one process: its in-memory runtime cannot share a store)
at 16 clients in the same run for context.

`takeover`: how long a thread whose server was killed (SIGKILL) in the middle of a
node takes to complete, with a second server live on the same PostgreSQL store,
as a function of the lease (`run_lease_seconds`), at the default worker poll of
1 s. Holdpoint only: `langgraph dev` keeps its runs in its process, which has no
one to take them over.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from bench.backends import LANGGRAPH, scratch_dir
from bench.harness import QUICK, BenchError, Runner
from bench.http import (
    Endpoint,
    _cycles,
    holdpoint_server,
    langgraph_server,
    percentile,
)
from bench.postgres import Server, drop_schema, new_schema_name
from bench.report import CaseResult, Stats, Table, Target
from bench.stats import fmt_ms, fmt_num, fmt_ratio

ONE, TWO = "Holdpoint, 1 process", "Holdpoint, 2 processes"
CLIENTS = 16
CYCLES, QUICK_CYCLES = 12, 2
LEASES = (1.0, 2.0, 4.0)
HANG_GRAPH = """\
import pathlib, time
from typing import Any, TypedDict
from domain.graph import END, START, StateGraph
from domain.types import interrupt

FOLDER = pathlib.Path({folder!r})

class Refund(TypedDict):
    amount: float
    approved: Any
    paid: bool

def review(state):
    return {{"approved": interrupt({{"amount": state["amount"]}})}}

def pay(state):
    (FOLDER / "entered").touch()
    while (FOLDER / "hang").exists():
        time.sleep(0.005)
    return {{"paid": True}}

graph = StateGraph(Refund)
graph.add_node("review", review)
graph.add_node("pay", pay)
graph.add_edge(START, "review")
graph.add_edge("review", "pay")
graph.add_edge("pay", END)
"""


async def drive_spread(endpoints: list[Endpoint], clients: int, cycles: int) -> Stats:
    """`clients` concurrent clients, client n on endpoint n mod len(endpoints)."""
    from langgraph_sdk import get_client  # noqa: PLC0415 - a bench-only dependency

    pairs = []
    for n in range(clients):
        endpoint = endpoints[n % len(endpoints)]
        keys = endpoint.client_keys(n // len(endpoints))
        pairs.append(tuple(get_client(url=endpoint.url, api_key=key) for key in keys))
    try:
        await asyncio.gather(*(_cycles(s, d, 1, None) for s, d in pairs))
        resumes: list[float] = []
        cpu = sum(e.cpu_seconds() for e in endpoints)
        started = time.perf_counter()
        await asyncio.gather(*(_cycles(s, d, cycles, resumes) for s, d in pairs))
        elapsed = time.perf_counter() - started
        cpu = sum(e.cpu_seconds() for e in endpoints) - cpu
    finally:
        for pair in pairs:
            for client in pair:
                await client.aclose()
    millis = [seconds * 1000 for seconds in resumes]
    total = clients * cycles
    return {
        "cps": total / elapsed,
        "p50": percentile(millis, 0.5),
        "p99": percentile(millis, 0.99),
        "server_ms": cpu * 1000 / total,
    }


@contextmanager
def postgres_schema(server: Server) -> Iterator[str]:
    schema = new_schema_name()
    try:
        yield server.holdpoint_url(schema)
    finally:
        drop_schema(server, schema)


def _processes_job(side: str, cycles: int, server: Server | None) -> Callable[..., Stats]:
    def job(*, warm_up: bool) -> Stats:
        if warm_up:
            return {}
        with scratch_dir() as directory:
            if side == LANGGRAPH:
                with langgraph_server(directory) as endpoint:
                    return asyncio.run(drive_spread([endpoint], CLIENTS, cycles))
            assert server is not None
            count = 1 if side == ONE else 2
            with postgres_schema(server) as url, ExitStack() as stack:
                endpoints = []
                for n in range(count):
                    folder = directory / f"server-{n}"
                    folder.mkdir()
                    endpoints.append(
                        stack.enter_context(holdpoint_server(url, folder, CLIENTS // count))
                    )
                return asyncio.run(drive_spread(endpoints, CLIENTS, cycles))

    return job


def processes(runner: Runner) -> CaseResult:
    """Refund cycles at 16 clients on one PostgreSQL store: one server against two."""
    cycles = QUICK_CYCLES if runner.settings == QUICK else CYCLES
    result = CaseResult(
        "processes",
        "Runs in the store: one server process against two, on one PostgreSQL store",
        f"{CLIENTS} concurrent clients (asyncio tasks of the official async SDK client, "
        "each with an agent's and a reviewer's key) run refund cycles as in benchmark 6 "
        "(`threads.create`, `runs.wait` to the interrupt, `runs.wait` with the resume), "
        f"1 untimed warm-up cycle and then {cycles} timed cycles each, against "
        "`holdpoint serve` on a fresh PostgreSQL schema: one process, or two processes on "
        "the same schema with client n on server n mod 2 (as a round-robin balancer would "
        "send it); every run claims its thread's lease in the store, whichever process "
        "runs it. LangGraph's `langgraph dev` (one process, its in-memory runtime) at the "
        "same 16 clients for context. cycles/s over the timed cycles; resume p50/p99 as "
        "the clients saw them; server CPU = all server processes' user + system time "
        "per cycle. Medians of the repetitions; sides alternate. On this 2-core machine "
        "the second process competes with the first, PostgreSQL and the clients for the "
        "same two cores.",
        [Table(["side", "cycles/s", "resume p50 ms", "resume p99 ms", "server CPU ms/cycle"])],
    )
    reason = runner.skipped("postgres")
    if reason is not None:
        result.targets.append(Target("two processes measured", None, reason))
        return result
    jobs = {side: _processes_job(side, cycles, runner.server) for side in (ONE, TWO, LANGGRAPH)}
    by_side = runner.alternate("processes", jobs)
    table = result.tables[0]
    for side in (ONE, TWO, LANGGRAPH):
        stats = by_side.get(side)
        if stats is None:
            table.rows.append([side, "no result", "", "", ""])
            continue
        table.rows.append(
            [
                side,
                fmt_num(stats["cps"]),
                fmt_ms(stats["p50"]),
                fmt_ms(stats["p99"]),
                fmt_ms(stats["server_ms"]),
            ]
        )
    one, two, theirs = by_side.get(ONE), by_side.get(TWO), by_side.get(LANGGRAPH)
    if one and two:
        ratio = two["cps"] / one["cps"]
        result.targets.append(
            Target("cycles/s, 2 processes / 1 process", None, fmt_ratio(ratio), reported=True)
        )
        table.rows.append(["ratio 2/1", fmt_ratio(ratio), "", "", ""])
    if two and theirs:
        table.rows.append(
            ["ratio 2 processes/L", fmt_ratio(two["cps"] / theirs["cps"]), "", "", ""]
        )
    return result


def _paused_then_killed(url: str, keys: tuple[str, str], folder: Path) -> str:
    """A thread paused at its review, approved, its `pay` hanging: the thread id."""
    agent, reviewer = keys
    with httpx.Client(base_url=url, headers={"x-api-key": agent}, timeout=60) as http:
        thread_id = http.post("/threads", json={"graph_id": "refund"}).json()["thread_id"]
        paused = http.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund", "input": {"amount": 1.0, "paid": False}},
        ).json()
    interrupt_id = paused["__interrupt__"][0]["id"]
    (folder / "hang").touch()
    decided = httpx.post(
        f"{url}/approvals/{interrupt_id}/decision",
        json={"decision": "approve", "reason": "bench"},
        headers={"x-api-key": reviewer},
        timeout=60,
    )
    if decided.status_code != 200:
        raise BenchError(f"the decision failed: {decided.text}")
    deadline = time.monotonic() + 60
    while not (folder / "entered").exists():
        if time.monotonic() > deadline:
            raise BenchError("the node never started")
        time.sleep(0.005)
    return str(thread_id)


def _takeover_job(lease: float, server: Server) -> Callable[..., Stats]:
    def job(*, warm_up: bool) -> Stats:
        if warm_up:
            return {}
        with scratch_dir() as directory, postgres_schema(server) as url:
            config = f"[server]\nrun_lease_seconds = {lease}\n"
            graph = HANG_GRAPH.format(folder=str(directory))
            a, b = directory / "a", directory / "b"
            a.mkdir()
            b.mkdir()
            with (
                _hang_server(url, a, graph, config) as first,
                _hang_server(url, b, graph, config) as second,
            ):
                thread_id = _paused_then_killed(first.url, _keys(first), directory)
                killed = time.perf_counter()
                os.kill(first.pid, signal.SIGKILL)
                (directory / "hang").unlink()
                _wait_completed(second, thread_id)
                return {"takeover_s": time.perf_counter() - killed}

    return job


@contextmanager
def _hang_server(url: str, folder: Path, graph: str, config: str) -> Iterator[Endpoint]:
    with holdpoint_server(url, folder, 1, config, graph_source=graph) as endpoint:
        yield endpoint


def _keys(endpoint: Endpoint) -> tuple[str, str]:
    """The agent's and the reviewer's key of a Holdpoint server's first client."""
    agent, reviewer = endpoint.client_keys(0)
    if agent is None or reviewer is None:
        msg = "the Holdpoint server was started without client keys"
        raise RuntimeError(msg)
    return agent, reviewer


def _wait_completed(endpoint: Endpoint, thread_id: str) -> None:
    agent, _ = _keys(endpoint)
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=endpoint.url, headers={"x-api-key": agent}, timeout=60) as http:
        while time.monotonic() < deadline:
            state = http.get(f"/threads/{thread_id}/state").json()
            if state["values"].get("paid") and not state["next"]:
                return
            time.sleep(0.01)
    raise BenchError(f"thread {thread_id} was not taken over within 120 s")


def takeover(runner: Runner) -> CaseResult:
    """Seconds from a SIGKILL mid-node to the thread's completion by another server."""
    result = CaseResult(
        "takeover",
        "Runs in the store: takeover after a SIGKILL, by lease",
        "Two `holdpoint serve` processes on one fresh PostgreSQL schema, with "
        "`run_lease_seconds` as in the table (renewed every third of it) and the default "
        "`run_poll_seconds = 1`. A thread pauses at its review on the first; a reviewer "
        "approves it; its `pay` node starts and hangs; the first server is killed with "
        "SIGKILL and `pay` may then go on. Timed: from the kill to the moment the "
        "thread's state shows `pay` done, read by polling the second server every 10 ms "
        "(the lease's remaining time, the worker's poll, the takeover with its "
        "RunReclaimed event and `pay` run again). Medians of the repetitions. Holdpoint "
        "only: `langgraph dev` keeps runs in its process, with no one to take them over.",
        [Table(["run_lease_seconds", "takeover s (median)", "takeover / lease"])],
    )
    reason = runner.skipped("postgres")
    if reason is not None or runner.server is None:
        result.targets.append(Target("takeover measured", None, reason or "no PostgreSQL"))
        return result
    leases = LEASES[:1] if runner.settings == QUICK else LEASES
    jobs = {f"lease {lease:g}": _takeover_job(lease, runner.server) for lease in leases}
    by_lease = runner.alternate("takeover", jobs)
    for lease in leases:
        stats = by_lease.get(f"lease {lease:g}")
        if stats is None:
            result.tables[0].rows.append([f"{lease:g}", "no result", ""])
            continue
        seconds = stats["takeover_s"]
        result.tables[0].rows.append([f"{lease:g}", f"{seconds:.2f}", fmt_ratio(seconds / lease)])
    result.targets.append(Target("takeover time, by lease", None, "see the table", reported=True))
    return result


RUN_CASES: dict[str, Callable[[Runner], CaseResult]] = {
    "processes": processes,
    "takeover": takeover,
}
