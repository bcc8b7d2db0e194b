"""Benchmark 6 (issue 5, Performance): refund cycles over HTTP, server against server.

Holdpoint's server (`holdpoint serve`) and LangGraph's own (`langgraph dev`,
langgraph-api's in-memory runtime) run as subprocesses on free loopback ports,
both on seed (a), the refund graph, as ``bench/graphs.py`` builds it: each side
gets a module file in a temporary directory that builds it with its own API
(LangGraph's also gets a ``langgraph.json`` naming it). Holdpoint runs on a fresh
SQLite file (the embedded store), and, as an extra row, on a fresh PostgreSQL
schema; before it starts, each client gets an agent's and a reviewer's key of its
own (``Keyring.create``, what ``holdpoint keys create`` does): its agent starts each
thread and its reviewer resumes it (separation of duties is on).

The clients are the official async SDK client (``langgraph_sdk.get_client``),
driven from this process: N concurrent clients are N asyncio tasks, each with
two SDK clients (the starter's and the decider's; both without a key on
LangGraph's side). A cycle is ``threads.create()``, ``runs.wait(input=...)``
(which pauses at the interrupt), then ``runs.wait(command={"resume": True})``
(which ends the graph); the resume is timed on its own.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.backends import HOLDPOINT, LANGGRAPH, LANGGRAPH_VENV, scratch_dir
from bench.harness import QUICK, BenchError, Runner, check
from bench.postgres import drop_schema, new_schema_name
from bench.report import (
    CaseResult,
    Metric,
    Stats,
    Table,
    Target,
    skipped_row,
)
from bench.stats import fmt_ms, fmt_num, fmt_ratio

if TYPE_CHECKING:
    from bench.postgres import Server

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOLDPOINT_POSTGRES = "Holdpoint, PostgreSQL"
# Context, not a target: every run at once on a pool of 32 threads (`run_turn = 0` in the
# `[server]` of a holdpoint.toml), as before runs went one after another while they compute.
HOLDPOINT_POOL = "Holdpoint, run_turn=0"
POOL_TOML = "[server]\nrun_turn = 0\n"
SIDES = (HOLDPOINT, HOLDPOINT_POOL, HOLDPOINT_POSTGRES, LANGGRAPH)
THROUGHPUT_LIMIT = 2.0  # Holdpoint's cycles/s at least 2 x LangGraph's ...
THROUGHPUT_CLIENTS = (8, 32)  # ... at these client counts
RESUME_P99_MS = 50.0  # and a resume's p99 under 50 ms ...
RESUME_CLIENTS = 8  # ... at 8 clients
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
REFUND_INPUT = {"refund_amount": 250.0, "approved": False}

HOLDPOINT_GRAPH = """\
import sys
sys.path.insert(0, {root!r})
from bench.graphs import Api, refund_builder
from domain.graph import END, START, StateGraph
from domain.types import Command, interrupt

graph = refund_builder(Api(StateGraph, START, END, interrupt, Command))
"""
LANGGRAPH_GRAPH = """\
import sys
sys.path.insert(0, {root!r})
from bench.graphs import Api, refund_builder
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

graph = refund_builder(Api(StateGraph, START, END, interrupt, Command)).compile()
"""
LANGGRAPH_JSON = '{"dependencies": ["."], "graphs": {"refund": "./refund_graph.py:graph"}}\n'


@dataclass(frozen=True)
class Sizes:
    """Concurrent clients, and cycles per client at each count (the same on every side)."""

    clients: tuple[int, ...] = (1, 8, 32)
    cycles: tuple[int, ...] = (20, 25, 8)
    warmup_cycles: int = 2
    reps: int = 3


QUICK_SIZES = Sizes(cycles=(2, 2, 1), warmup_cycles=0, reps=1)


def _sizes(runner: Runner) -> Sizes:
    return QUICK_SIZES if runner.settings == QUICK else Sizes()


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(int(fraction * len(ordered) + 0.999999) - 1, 0)]


# -- servers -----------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A running server: its URL, its process, and per client the keys of its starter and
    of its decider (none on LangGraph's side)."""

    url: str
    pid: int
    keys: tuple[tuple[str, str], ...] = ()

    def client_keys(self, client: int) -> tuple[str | None, str | None]:
        """The starter's and the decider's key of client number `client`."""
        if not self.keys:
            return None, None
        return self.keys[client % len(self.keys)]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux), or NaN."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return ""


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``url`` until it answers 200; raise if the process dies or the deadline passes."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            message = f"the server exited {process.returncode} before it was ready:\n{_tail(log)}"
            raise BenchError(message)
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    message = f"{url} did not answer within {START_TIMEOUT_S:g} s:\n{_tail(log)}"
    raise BenchError(message)


@contextmanager
def running(
    command: list[str], env: dict[str, str], cwd: Path, health: str, log: Path
) -> Iterator[int]:
    """Run a server subprocess until it answers ``health``; stop it with SIGTERM afterwards."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            wait_ready(health, process, log)
            yield process.pid
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _holdpoint_keys(store_url: str, clients: int) -> tuple[tuple[str, str], ...]:
    """An agent's and a reviewer's key per client, as `holdpoint keys create` makes them:
    each client is a principal of its own, as independent callers are (the per-key rate
    limits then apply to each, not to all the clients together)."""
    from domain.access.keyring import Keyring  # noqa: PLC0415
    from domain.record.store import open_store  # noqa: PLC0415

    with open_store(store_url) as store:
        keyring = Keyring(store)
        return tuple(
            (
                keyring.create(f"bench-agent-{n}", "agent")[1],
                keyring.create(f"bench-reviewer-{n}", "reviewer")[1],
            )
            for n in range(clients)
        )


@contextmanager
def holdpoint_server(
    store_url: str, directory: Path, clients: int, config: str = "", graph_source: str = ""
) -> Iterator[Endpoint]:
    """``holdpoint serve`` on ``store_url``, serving the refund graph (or the module
    ``graph_source``, whose ``graph`` it serves) as ``refund``, with keys for ``clients``
    clients (and ``config`` as its holdpoint.toml, if any)."""
    graph = directory / "refund_graph.py"
    graph.write_text(graph_source or HOLDPOINT_GRAPH.format(root=str(ROOT)), encoding="utf-8")
    env = {**os.environ, "HOLDPOINT_STORE": store_url}
    keys = _holdpoint_keys(store_url, clients)
    port = free_port()
    command = [
        str(BIN / "holdpoint"),
        "serve",
        "--graph",
        f"refund={graph}:graph",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    if config:
        (directory / "holdpoint.toml").write_text(config, encoding="utf-8")
        command += ["--config", str(directory / "holdpoint.toml")]
    url = f"http://127.0.0.1:{port}"
    with running(command, env, directory, f"{url}/healthz", directory / "holdpoint.log") as pid:
        yield Endpoint(url, pid, keys)


@contextmanager
def langgraph_server(directory: Path) -> Iterator[Endpoint]:
    """``langgraph dev`` (in-memory runtime, its defaults) serving the refund graph."""
    (directory / "refund_graph.py").write_text(
        LANGGRAPH_GRAPH.format(root=str(ROOT)), encoding="utf-8"
    )
    config = directory / "langgraph.json"
    config.write_text(LANGGRAPH_JSON, encoding="utf-8")
    port = free_port()
    langgraph = LANGGRAPH_VENV / "bin" / "langgraph"
    if not langgraph.exists():
        message = (
            f"no LangGraph server at {langgraph}: `make bench` creates {LANGGRAPH_VENV.name} "
            "from bench/langgraph-server.txt (or set HOLDPOINT_BENCH_LANGGRAPH_VENV)"
        )
        raise BenchError(message)
    command = [
        str(langgraph),
        "dev",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
    ]
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false"}
    url = f"http://127.0.0.1:{port}"
    with running(command, env, directory, f"{url}/ok", directory / "langgraph.log") as pid:
        yield Endpoint(url, pid)


# -- clients -----------------------------------------------------------------


async def _cycles(starter: Any, decider: Any, cycles: int, resumes: list[float] | None) -> None:
    """``cycles`` refund cycles, one after another; each resume's seconds into ``resumes``."""
    for _ in range(cycles):
        thread = await starter.threads.create()
        thread_id = thread["thread_id"]
        paused = await starter.runs.wait(thread_id, "refund", input=REFUND_INPUT)
        check(ok="__interrupt__" in paused, what="no interrupt", got=paused)
        started = time.perf_counter()
        done = await decider.runs.wait(thread_id, "refund", command={"resume": True})
        took = time.perf_counter() - started
        check(ok=done.get("approved") is True, what="not approved", got=done)
        if resumes is not None:
            resumes.append(took)


async def drive(endpoint: Endpoint, clients: int, cycles: int, warmup: int) -> Stats:
    """Warm up, then ``clients`` concurrent clients doing ``cycles`` cycles each."""
    from langgraph_sdk import get_client  # noqa: PLC0415 - a bench-only dependency

    pairs = [
        tuple(get_client(url=endpoint.url, api_key=key) for key in endpoint.client_keys(n))
        for n in range(clients)
    ]
    try:
        await asyncio.gather(*(_cycles(s, d, warmup, None) for s, d in pairs))
        resumes: list[float] = []
        server_cpu, client_cpu = cpu_seconds(endpoint.pid), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(_cycles(s, d, cycles, resumes) for s, d in pairs))
        elapsed = time.perf_counter() - started
        server_cpu = cpu_seconds(endpoint.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
    finally:
        for pair in pairs:
            for client in pair:
                await client.aclose()
    millis = [seconds * 1000 for seconds in resumes]
    total = clients * cycles
    return {
        f"c{clients}_cps": total / elapsed,
        f"c{clients}_p50": percentile(millis, 0.50),
        f"c{clients}_p99": percentile(millis, 0.99),
        f"c{clients}_server_ms": server_cpu * 1000 / total,
        f"c{clients}_client_ms": client_cpu * 1000 / total,
    }


def measure_all(endpoint: Endpoint, sizes: Sizes) -> Stats:
    """Every client count, in order, against one server."""
    stats: Stats = {}
    for clients, cycles in zip(sizes.clients, sizes.cycles, strict=True):
        stats.update(asyncio.run(drive(endpoint, clients, cycles, sizes.warmup_cycles)))
    return stats


# -- the case ----------------------------------------------------------------


def _job(side: str, sizes: Sizes, server: Server | None) -> Callable[..., Stats]:
    """One repetition of one side: a fresh store and server, every client count."""

    def job(*, warm_up: bool) -> Stats:
        if warm_up:  # each repetition has a fresh server, which it warms up itself
            return {}
        with scratch_dir() as directory:
            if side == LANGGRAPH:
                with langgraph_server(directory) as endpoint:
                    return measure_all(endpoint, sizes)
            if side in (HOLDPOINT, HOLDPOINT_POOL):
                url = f"sqlite:///{directory / 'holdpoint.db'}"
                config = POOL_TOML if side == HOLDPOINT_POOL else ""
                with holdpoint_server(url, directory, max(sizes.clients), config) as endpoint:
                    return measure_all(endpoint, sizes)
            assert server is not None
            schema = new_schema_name()
            try:
                with holdpoint_server(
                    server.holdpoint_url(schema), directory, max(sizes.clients)
                ) as endpoint:
                    return measure_all(endpoint, sizes)
            finally:
                drop_schema(server, schema)

    return job


METRICS = (
    Metric("cps", "cycles/s", fmt_num),
    Metric("p50", "resume p50 ms", fmt_ms),
    Metric("p99", "resume p99 ms", fmt_ms),
    Metric("server_ms", "server CPU ms/cycle", fmt_ms),
    Metric("client_ms", "client CPU ms/cycle", fmt_ms),
)


def _cells(stats: Stats | None, clients: int) -> list[str]:
    if stats is None:
        return ["no result", *([""] * (len(METRICS) - 1))]
    values = [stats[f"c{clients}_{metric.key}"] for metric in METRICS]
    return ["n/a" if math.isnan(v) else m.fmt(v) for m, v in zip(METRICS, values, strict=True)]


def _ratio(by_side: dict[str, Stats | None], side: str, key: str) -> float | None:
    mine, theirs = by_side.get(side), by_side.get(LANGGRAPH)
    if mine is None or theirs is None or not theirs.get(key) or math.isnan(mine[key] + theirs[key]):
        return None
    return mine[key] / theirs[key]


def http_cycles(runner: Runner) -> CaseResult:
    """Benchmark 6: refund cycles through the SDK, Holdpoint's server vs LangGraph's."""
    sizes = _sizes(runner)
    per_client = ", ".join(
        f"{n} client{'s' if n > 1 else ''}: {c} cycles each"
        for n, c in zip(sizes.clients, sizes.cycles, strict=True)
    )
    result = CaseResult(
        "http",
        "6. Refund cycles over HTTP: Holdpoint's server vs LangGraph's",
        "Each side's server runs as a subprocess on a free loopback port, on seed (a) built "
        "by `bench/graphs.py` with the side's own API: `holdpoint serve --graph "
        "refund=...` on a fresh SQLite file (and, as an extra row, on a fresh PostgreSQL "
        "schema), with an agent's and a reviewer's key per client made before it starts "
        "(`Keyring.create`, what `holdpoint keys create` does; each client is its own "
        "principal, so the per-key rate limits apply per client; separation of duties on: "
        "the agent starts each thread, the reviewer resumes it); `langgraph dev "
        "--no-reload` (langgraph-api's in-memory "
        "runtime, its default settings; from its own environment, `.venv-langgraph`, "
        "pinned in `bench/langgraph-server.txt`) on a `langgraph.json` naming the same "
        "graph. Both servers are uvicorn on uvloop and httptools. Each "
        "waits for readiness by polling its health endpoint (`/healthz`, `/ok`). The "
        "clients are the official async SDK client (`langgraph_sdk.get_client`) in the "
        "benchmark process: N concurrent clients are N asyncio tasks, each with its own "
        "starter's and decider's SDK client (no key on LangGraph's side). A cycle: "
        "`threads.create()`, `runs.wait(input=...)` (pauses at the interrupt; checked), "
        "`runs.wait(command={'resume': True})` (ends; checked). Per repetition each side "
        "gets a fresh server and store and runs the client counts in turn: "
        f"{sizes.warmup_cycles} untimed warm-up cycle(s) per client, then {per_client}. "
        "cycles/s = all cycles / wall time from the first client's start to the last "
        "client's end; resume = the `runs.wait` with the resume, as its client saw it "
        "(nearest-rank p50 and p99 over the repetition's resumes); CPU ms/cycle = CPU time "
        "(user + system) over the timed cycles / cycles, of the server's process (from "
        "`/proc`; without PostgreSQL's own processes) and of the benchmark process, which "
        "runs nothing but the clients then. Medians of "
        f"{sizes.reps} repetition(s); sides alternate. Note: `langgraph dev` defaults to "
        "one background job at a time (`N_JOBS_PER_WORKER=1`) and its idle queue polls "
        "for new runs every 0.5 s, so a lone client waits about that long per run; with "
        "more jobs per worker (`--n-jobs-per-worker`) it measured slower here. The row "
        f"*{HOLDPOINT_POOL}* is for context, not a target: the same server with "
        "`run_turn = 0` in its holdpoint.toml (every run at once on a pool of 32 threads, "
        "contending for the GIL, instead of the default: one after another on one thread "
        "while their nodes compute, beside it when a node waits; `service/run_executor.py`).",
        [Table(["clients", "side", *(metric.header for metric in METRICS)])],
    )
    postgres_reason = runner.skipped("postgres")
    sides = [s for s in SIDES if s != HOLDPOINT_POSTGRES or postgres_reason is None]
    jobs = {side: _job(side, sizes, runner.server) for side in sides}
    by_side = runner.alternate("http", jobs, reps=sizes.reps)
    table = result.tables[0]
    for clients in sizes.clients:
        for side in SIDES:
            if side == HOLDPOINT_POSTGRES and postgres_reason is not None:
                row = skipped_row(side, postgres_reason, len(METRICS) - 1)
                table.rows.append([str(clients), *row])
                continue
            table.rows.append([str(clients), side, *_cells(by_side.get(side), clients)])
        for side, label in (
            (HOLDPOINT, "ratio H/L"),
            (HOLDPOINT_POOL, "ratio H(run_turn=0)/L"),
            (HOLDPOINT_POSTGRES, "ratio H(PostgreSQL)/L"),
        ):
            if side not in by_side:
                continue
            cells = [_ratio(by_side, side, f"c{clients}_{metric.key}") for metric in METRICS]
            table.rows.append(
                [str(clients), label, *("n/a" if c is None else fmt_ratio(c) for c in cells)]
            )
    for clients in THROUGHPUT_CLIENTS:
        if clients not in sizes.clients:
            continue
        description = (
            f"sqlite, {clients} clients: cycles/s at least {THROUGHPUT_LIMIT:g} x LangGraph's"
        )
        value = _ratio(by_side, HOLDPOINT, f"c{clients}_cps")
        if value is None:
            result.targets.append(Target(description, None, "not measured"))
        else:
            result.targets.append(
                Target(
                    description,
                    value >= THROUGHPUT_LIMIT,
                    f"ratio {fmt_ratio(value)} (at least {THROUGHPUT_LIMIT:g})",
                )
            )
    description = f"sqlite, {RESUME_CLIENTS} clients: resume p99 < {RESUME_P99_MS:g} ms"
    mine = by_side.get(HOLDPOINT)
    if mine is None:
        result.targets.append(Target(description, None, "not measured"))
    else:
        p99 = mine[f"c{RESUME_CLIENTS}_p99"]
        result.targets.append(
            Target(
                description,
                p99 < RESUME_P99_MS,
                f"p99 {fmt_ms(p99)} ms (limit {RESUME_P99_MS:g} ms)",
            )
        )
    return result


HTTP_CASES: dict[str, Callable[[Runner], CaseResult]] = {"http": http_cycles}
