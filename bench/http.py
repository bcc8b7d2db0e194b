"""Benchmark 6 (issue 5, Performance): refund cycles over HTTP, server against server.

Holdpoint's server (`holdpoint serve`), LangGraph's own (`langgraph dev`,
langgraph-api's in-memory runtime) and Aegra's (aegra-api, a self-hosted server
of LangGraph's API on PostgreSQL) run as subprocesses on free loopback ports,
all on seed (a), the refund graph, as ``bench/graphs.py`` builds it: each side
gets a module file in a temporary directory that builds it with its own API
(LangGraph's and Aegra's also get a ``langgraph.json`` or ``aegra.json`` naming
it). Holdpoint runs on a fresh SQLite file (the embedded store), and, as an extra
row, on a fresh PostgreSQL schema; Aegra on a fresh PostgreSQL database of its
own. Before Holdpoint starts, each client gets an agent's and a reviewer's key of
its own (``Keyring.create``, what ``holdpoint keys create`` does): its agent starts
each thread and its reviewer resumes it (separation of duties is on).

The clients are the official async SDK client (``langgraph_sdk.get_client``),
driven from this process: N concurrent clients are N asyncio tasks, each with
two SDK clients (the starter's and the decider's; both without a key on
LangGraph's and Aegra's sides). A cycle is ``threads.create()``, ``runs.wait(input=...)``
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
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.backends import HOLDPOINT, LANGGRAPH, LANGGRAPH_VENV, scratch_dir
from bench.harness import QUICK, BenchError, Runner, check
from bench.postgres import drop_schema, fresh_database, new_schema_name
from bench.report import (
    CaseResult,
    Metric,
    Stats,
    Table,
    Target,
    skipped_row,
    skipped_target,
)
from bench.stats import fmt_ms, fmt_num, fmt_ratio

if TYPE_CHECKING:
    from bench.postgres import Server

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HOLDPOINT_POSTGRES = "Holdpoint, PostgreSQL"
# As docker-compose.yml deploys it: `serve --no-projector` and a `holdpoint projector`
# process beside it; its CPU per cycle counts both processes.
HOLDPOINT_DEPLOYED = "Holdpoint, PostgreSQL, projector apart"
# Context, not a target: every run at once on a pool of 32 threads (`run_turn = 0` in the
# `[server]` of a holdpoint.toml), as before runs went one after another while they compute.
HOLDPOINT_POOL = "Holdpoint, run_turn=0"
POOL_TOML = "[server]\nrun_turn = 0\n"
# Context, not a target: `serve --cpu 0`, every thread of the server on one CPU
# (service/cpu.py); opt-in, so the targets stay on the default side.
HOLDPOINT_ONE_CPU = "Holdpoint, --cpu 0"
AEGRA = "Aegra"
# Aegra's server lives in an environment of its own (bench/aegra-server.txt says why).
AEGRA_VENV = Path(os.environ.get("HOLDPOINT_BENCH_AEGRA_VENV") or ROOT / ".venv-aegra")
AEGRA_DATABASE_PREFIX = "bench_aegra_"
SIDES = (
    HOLDPOINT,
    HOLDPOINT_POOL,
    HOLDPOINT_ONE_CPU,
    HOLDPOINT_POSTGRES,
    HOLDPOINT_DEPLOYED,
    LANGGRAPH,
    AEGRA,
)
POSTGRES_SIDES = (HOLDPOINT_POSTGRES, HOLDPOINT_DEPLOYED, AEGRA)
THROUGHPUT_LIMIT = 2.0  # Holdpoint's cycles/s at least 2 x LangGraph's ...
THROUGHPUT_CLIENTS = (8, 32)  # ... at these client counts
AEGRA_THROUGHPUT_LIMIT = 3.0  # and on PostgreSQL at least 3 x Aegra's, at the same counts
# The server's CPU per cycle (its processes, from /proc) at most this many ms (issue 26).
CPU_LIMITS = ((HOLDPOINT, "sqlite", 3.0), (HOLDPOINT_DEPLOYED, "postgres", 5.0))
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
    """A running server: its URL, its process, per client the keys of its starter and of
    its decider (none on LangGraph's and Aegra's sides), and the side's other processes
    (a projector beside the server), whose CPU is the side's too."""

    url: str
    pid: int
    keys: tuple[tuple[str, str], ...] = ()
    helpers: tuple[int, ...] = ()

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the side's processes so far (Linux), or NaN."""
        return sum(cpu_seconds(pid) for pid in (self.pid, *self.helpers))

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


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, poll: float = 0.1) -> None:
    """Poll ``url`` every ``poll`` s until it answers 200; raise if the process dies or the
    deadline passes."""
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
        time.sleep(poll)
    message = f"{url} did not answer within {START_TIMEOUT_S:g} s:\n{_tail(log)}"
    raise BenchError(message)


@contextmanager
def running(
    command: list[str], env: dict[str, str], cwd: Path, health: str, log: Path, poll: float = 0.1
) -> Iterator[int]:
    """Run a server subprocess until it answers ``health`` (asked every ``poll`` s); stop it
    with SIGTERM afterwards."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            wait_ready(health, process, log, poll)
            yield process.pid
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `STOP_TIMEOUT_S`."""
    if process.poll() is not None:
        return
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
    store_url: str,
    directory: Path,
    clients: int,
    config: str = "",
    graph_source: str = "",
    ready: tuple[str, float] = ("/healthz", 0.1),
    *,
    projector_apart: bool = False,
    cpu: int | None = None,
) -> Iterator[Endpoint]:
    """``holdpoint serve`` on ``store_url``, serving the refund graph (or the module
    ``graph_source``, whose ``graph`` it serves) as ``refund``, with keys for ``clients``
    clients (and ``config`` as its holdpoint.toml, if any); yielded once the path of
    ``ready`` answers 200, asked every ``ready[1]`` s. ``projector_apart``: the server runs
    with ``--no-projector`` and a ``holdpoint projector`` process beside it (PostgreSQL);
    ``cpu``: with ``--cpu``."""
    graph = directory / "refund_graph.py"
    graph.write_text(graph_source or HOLDPOINT_GRAPH.format(root=str(ROOT)), encoding="utf-8")
    env = {**os.environ, "HOLDPOINT_STORE": store_url}
    keys = _holdpoint_keys(store_url, clients) if clients else ()
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
    if projector_apart:
        command.append("--no-projector")
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    url = f"http://127.0.0.1:{port}"
    health, poll = ready
    with ExitStack() as stack:
        helpers = [stack.enter_context(_projector(env, directory))] if projector_apart else []
        log = directory / "holdpoint.log"
        pid = stack.enter_context(running(command, env, directory, url + health, log, poll))
        yield Endpoint(url, pid, keys, tuple(helpers))


@contextmanager
def _projector(env: dict[str, str], directory: Path) -> Iterator[int]:
    """A ``holdpoint projector`` process on ``env``'s store, until SIGTERM afterwards."""
    with (directory / "projector.log").open("wb") as output:
        process = subprocess.Popen(
            [str(BIN / "holdpoint"), "projector"],
            env=env,
            cwd=directory,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process.pid
            if process.poll() is not None:  # its CPU would be missing from the side's
                message = f"holdpoint projector stopped: {_tail(directory / 'projector.log')}"
                raise BenchError(message)
        finally:
            _stop(process)


def _refund_graph(directory: Path, config_name: str) -> Path:
    """The refund graph's module in `directory` for a server of LangGraph's API, and the
    config (`langgraph.json`, `aegra.json`) that names it; the config's path."""
    (directory / "refund_graph.py").write_text(
        LANGGRAPH_GRAPH.format(root=str(ROOT)), encoding="utf-8"
    )
    config = directory / config_name
    config.write_text(LANGGRAPH_JSON, encoding="utf-8")
    return config


def _installed(program: Path, server: str, variable: str) -> Path:
    """`program` of the environment `make bench` creates from bench/<server>-server.txt;
    BenchError, saying how to get it, when it is not there."""
    if not program.exists():
        venv = program.parent.parent
        message = (
            f"no {server} server at {program}: `make bench` creates {venv.name} from "
            f"bench/{server}-server.txt (or set HOLDPOINT_BENCH_{variable}_VENV)"
        )
        raise BenchError(message)
    return program


@contextmanager
def langgraph_server(directory: Path) -> Iterator[Endpoint]:
    """``langgraph dev`` (in-memory runtime, its defaults) serving the refund graph."""
    config = _refund_graph(directory, "langgraph.json")
    langgraph = _installed(LANGGRAPH_VENV / "bin" / "langgraph", "langgraph", "LANGGRAPH")
    port = free_port()
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


@contextmanager
def aegra_server(directory: Path, database_url: str) -> Iterator[Endpoint]:
    """Aegra's server on ``database_url`` (its defaults, no auth) serving the refund graph.

    The command is the one ``aegra serve`` runs in a child process (uvicorn on
    ``aegra_api.main:app``, one worker), run directly so that the process measured is
    the server's. It applies its migrations to the database as it starts.
    """
    config = _refund_graph(directory, "aegra.json")
    python = _installed(AEGRA_VENV / "bin" / "python", "aegra", "AEGRA")
    port = free_port()
    command = [str(python), "-m", "uvicorn", "aegra_api.main:app"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    env = {
        **os.environ,
        "AEGRA_CONFIG": str(config),
        "DATABASE_URL": database_url,
        "AUTH_TYPE": "noop",
    }
    url = f"http://127.0.0.1:{port}"
    with running(command, env, directory, f"{url}/health", directory / "aegra.log") as pid:
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
        server_cpu, client_cpu = endpoint.cpu_seconds(), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(_cycles(s, d, cycles, resumes) for s, d in pairs))
        elapsed = time.perf_counter() - started
        server_cpu = endpoint.cpu_seconds() - server_cpu
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
            if side == AEGRA:
                assert server is not None
                with (
                    fresh_database(server, AEGRA_DATABASE_PREFIX) as url,
                    aegra_server(directory, url) as endpoint,
                ):
                    return measure_all(endpoint, sizes)
            if side in (HOLDPOINT, HOLDPOINT_POOL, HOLDPOINT_ONE_CPU):
                url = f"sqlite:///{directory / 'holdpoint.db'}"
                config = POOL_TOML if side == HOLDPOINT_POOL else ""
                cpu = 0 if side == HOLDPOINT_ONE_CPU else None
                with holdpoint_server(
                    url, directory, max(sizes.clients), config, cpu=cpu
                ) as endpoint:
                    return measure_all(endpoint, sizes)
            assert server is not None
            schema = new_schema_name()
            try:
                with holdpoint_server(
                    server.holdpoint_url(schema),
                    directory,
                    max(sizes.clients),
                    projector_apart=side == HOLDPOINT_DEPLOYED,
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


def _ratio(
    by_side: dict[str, Stats | None], side: str, key: str, against: str = LANGGRAPH
) -> float | None:
    mine, theirs = by_side.get(side), by_side.get(against)
    if mine is None or theirs is None or not theirs.get(key) or math.isnan(mine[key] + theirs[key]):
        return None
    return mine[key] / theirs[key]


RATIO_ROWS = (  # (side, against, label) of the table's ratio rows
    (HOLDPOINT, LANGGRAPH, "ratio H/L"),
    (HOLDPOINT_POOL, LANGGRAPH, "ratio H(run_turn=0)/L"),
    (HOLDPOINT_ONE_CPU, LANGGRAPH, "ratio H(--cpu 0)/L"),
    (HOLDPOINT_POSTGRES, LANGGRAPH, "ratio H(PostgreSQL)/L"),
    (HOLDPOINT_POSTGRES, AEGRA, "ratio H(PostgreSQL)/Aegra"),
    (HOLDPOINT_DEPLOYED, AEGRA, "ratio H(PostgreSQL, projector apart)/Aegra"),
)


def _method(sizes: Sizes) -> str:
    """The case's method paragraph, for the sizes it ran."""
    per_client = ", ".join(
        f"{n} client{'s' if n > 1 else ''}: {c} cycles each"
        for n, c in zip(sizes.clients, sizes.cycles, strict=True)
    )
    return (
        "Each side's server runs as a subprocess on a free loopback port, on seed (a) built "
        "by `bench/graphs.py` with the side's own API: `holdpoint serve --graph "
        "refund=...` on a fresh SQLite file (and, as extra rows, on a fresh PostgreSQL "
        "schema: the server alone, which then keeps the read models in its own "
        f"interpreter; and *{HOLDPOINT_DEPLOYED}*, as docker-compose.yml deploys it, "
        "`serve --no-projector` with a `holdpoint projector` process beside it, whose CPU "
        "is counted with the server's, the PostgreSQL targets' row; and, as context, "
        f"*{HOLDPOINT_ONE_CPU}*, the SQLite server with every thread on CPU 0, opt-in, so "
        "not the targets' row), with an agent's and "
        "a reviewer's key per client made before it starts "
        "(`Keyring.create`, what `holdpoint keys create` does; each client is its own "
        "principal, so the per-key rate limits apply per client; separation of duties on: "
        "the agent starts each thread, the reviewer resumes it); `langgraph dev "
        "--no-reload` (langgraph-api's in-memory "
        "runtime, its default settings; from its own environment, `.venv-langgraph`, "
        "pinned in `bench/langgraph-server.txt`) on a `langgraph.json` naming the same "
        "graph; Aegra (aegra-api 0.6.0 on langgraph 1.2.22, from its own environment, "
        "`.venv-aegra`, pinned in `bench/aegra-server.txt`) on an `aegra.json` naming the "
        "same graph and a fresh PostgreSQL database of its own per repetition "
        f"(`{AEGRA_DATABASE_PREFIX}...`, on the server of the PostgreSQL row, dropped "
        "afterwards), whose tables its Alembic migrations create as it starts. Aegra runs "
        "as `aegra serve` would: `python -m uvicorn aegra_api.main:app`, started directly "
        "so that the process measured is the server (one process: uvicorn's one worker, "
        "which also runs the graphs: Aegra has no worker of its own), "
        "with its default settings: no auth (`AUTH_TYPE=noop`); LangGraph's "
        "`AsyncPostgresSaver` and `AsyncPostgresStore` on a psycopg pool of 1 to 6 "
        "connections, its threads, runs and assistants through SQLAlchemy on asyncpg, a pool "
        "of 2 connections and no overflow; INFO logs, about 15 lines a cycle, in its "
        "console format, to a file. "
        "All three servers are uvicorn on uvloop and httptools. Each "
        "waits for readiness by polling its health endpoint (`/healthz`, `/ok`, `/health`). "
        "The clients are the official async SDK client (`langgraph_sdk.get_client`) in the "
        "benchmark process: N concurrent clients are N asyncio tasks, each with its own "
        "starter's and decider's SDK client (no key on LangGraph's and Aegra's sides). A "
        "cycle: `threads.create()`, `runs.wait(input=...)` (pauses at the interrupt; "
        "checked), `runs.wait(command={'resume': True})` (ends; checked). Per repetition "
        "each side gets a fresh server and store and runs the client counts in turn: "
        f"{sizes.warmup_cycles} untimed warm-up cycle(s) per client, then {per_client}. "
        "cycles/s = all cycles / wall time from the first client's start to the last "
        "client's end; resume = the `runs.wait` with the resume, as its client saw it "
        "(nearest-rank p50 and p99 over the repetition's resumes); CPU ms/cycle = CPU time "
        "(user + system) over the timed cycles / cycles, of the server's processes (from "
        "`/proc`; without PostgreSQL's own processes) and of the benchmark process, which "
        "runs nothing but the clients then. Medians of "
        f"{sizes.reps} repetition(s); sides alternate. Note: `langgraph dev` defaults to "
        "one background job at a time (`N_JOBS_PER_WORKER=1`) and its idle queue polls "
        "for new runs every 0.5 s, so a lone client waits about that long per run; with "
        "more jobs per worker (`--n-jobs-per-worker`) it measured slower here. Aegra has "
        "no queue to poll: its `runs.wait` runs the graph as an asyncio task in the "
        "process that took the request and awaits it, so a run is not durable (it dies "
        "with the process) and there is no limit to the runs in flight but its pools; its "
        "CPU, about 40 ms a cycle, bounds it here: at 8 and 32 clients, its logs at WARNING "
        "or pools of 10 and 20 connections measured within a run's noise of its defaults. "
        "The row "
        f"*{HOLDPOINT_POOL}* is for context, not a target: the same server with "
        "`run_turn = 0` in its holdpoint.toml (every run at once on a pool of 32 threads, "
        "contending for the GIL, instead of the default: one after another on one thread "
        "while their nodes compute, beside it when a node waits; `service/run_executor.py`)."
    )


def _rows(
    by_side: dict[str, Stats | None], clients: int, postgres_reason: str | None
) -> list[list[str]]:
    """The table's rows at ``clients`` clients: each side's, then the ratios."""
    rows = []
    for side in SIDES:
        if side in POSTGRES_SIDES and postgres_reason is not None:
            row = skipped_row(side, postgres_reason, len(METRICS) - 1)
            rows.append([str(clients), *row])
            continue
        rows.append([str(clients), side, *_cells(by_side.get(side), clients)])
    for side, against, label in RATIO_ROWS:
        if side not in by_side or against not in by_side:
            continue
        cells = [_ratio(by_side, side, f"c{clients}_{metric.key}", against) for metric in METRICS]
        rows.append([str(clients), label, *("n/a" if c is None else fmt_ratio(c) for c in cells)])
    return rows


def _throughput_target(
    by_side: dict[str, Stats | None],
    description: str,
    key: str,
    sides: tuple[str, str],
    limit: float,
) -> Target:
    """Whether ``sides[0]``'s ``key`` is at least ``limit`` x ``sides[1]``'s."""
    value = _ratio(by_side, sides[0], key, sides[1])
    if value is None:
        return Target(description, None, "not measured")
    return Target(description, value >= limit, f"ratio {fmt_ratio(value)} (at least {limit:g})")


def _cpu_target(
    by_side: dict[str, Stats | None],
    side: str,
    store: str,
    limit: float,
    sizes: Sizes,
    postgres_reason: str | None,
) -> Target:
    """The server's CPU per cycle at its worst over the throughput's client counts."""
    counts = [n for n in THROUGHPUT_CLIENTS if n in sizes.clients]
    description = (
        f"{store}, {' and '.join(map(str, counts))} clients: server CPU per cycle at most "
        f"{limit:g} ms" + (" (server and projector)" if side == HOLDPOINT_DEPLOYED else "")
    )
    if store == "postgres" and postgres_reason is not None:
        return skipped_target(description, postgres_reason)
    stats = by_side.get(side)
    if stats is None or not counts:
        return Target(description, None, "not measured")
    worst = max(counts, key=lambda n: stats[f"c{n}_server_ms"])
    cpu = stats[f"c{worst}_server_ms"]
    return Target(
        description, cpu <= limit, f"{fmt_ms(cpu)} ms at {worst} clients (limit {limit:g})"
    )


def _targets(
    by_side: dict[str, Stats | None], sizes: Sizes, postgres_reason: str | None
) -> list[Target]:
    """The issues' targets: throughput against LangGraph (SQLite) and Aegra (PostgreSQL),
    the server's CPU per cycle, and the resume's p99."""
    targets = []
    for clients in (n for n in THROUGHPUT_CLIENTS if n in sizes.clients):
        key = f"c{clients}_cps"
        targets.append(
            _throughput_target(
                by_side,
                f"sqlite, {clients} clients: cycles/s at least {THROUGHPUT_LIMIT:g} x LangGraph's",
                key,
                (HOLDPOINT, LANGGRAPH),
                THROUGHPUT_LIMIT,
            )
        )
    for clients in (n for n in THROUGHPUT_CLIENTS if n in sizes.clients):
        description = (
            f"postgres, {clients} clients: Holdpoint's cycles/s (server and projector, as "
            f"docker-compose.yml runs them) at least {AEGRA_THROUGHPUT_LIMIT:g} x Aegra's"
        )
        if postgres_reason is not None:
            targets.append(skipped_target(description, postgres_reason))
            continue
        targets.append(
            _throughput_target(
                by_side,
                description,
                f"c{clients}_cps",
                (HOLDPOINT_DEPLOYED, AEGRA),
                AEGRA_THROUGHPUT_LIMIT,
            )
        )
    for side, store, limit in CPU_LIMITS:
        targets.append(_cpu_target(by_side, side, store, limit, sizes, postgres_reason))
    description = f"sqlite, {RESUME_CLIENTS} clients: resume p99 < {RESUME_P99_MS:g} ms"
    mine = by_side.get(HOLDPOINT)
    if mine is None:
        targets.append(Target(description, None, "not measured"))
    else:
        p99 = mine[f"c{RESUME_CLIENTS}_p99"]
        targets.append(
            Target(
                description,
                p99 < RESUME_P99_MS,
                f"p99 {fmt_ms(p99)} ms (limit {RESUME_P99_MS:g} ms)",
            )
        )
    return targets


def http_cycles(runner: Runner) -> CaseResult:
    """Benchmark 6: refund cycles through the SDK, Holdpoint's server vs LangGraph's and
    Aegra's."""
    sizes = _sizes(runner)
    postgres_reason = runner.skipped("postgres")
    sides = [s for s in SIDES if s not in POSTGRES_SIDES or postgres_reason is None]
    jobs = {side: _job(side, sizes, runner.server) for side in sides}
    by_side = runner.alternate("http", jobs, reps=sizes.reps)
    table = Table(["clients", "side", *(metric.header for metric in METRICS)])
    for clients in sizes.clients:
        table.rows += _rows(by_side, clients, postgres_reason)
    return CaseResult(
        "http",
        "6. Refund cycles over HTTP: Holdpoint's server vs LangGraph's and Aegra's",
        _method(sizes),
        [table],
        _targets(by_side, sizes, postgres_reason),
    )


HTTP_CASES: dict[str, Callable[[Runner], CaseResult]] = {"http": http_cycles}
