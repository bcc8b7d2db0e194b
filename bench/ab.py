"""A/B: the refund cycle over HTTP (or the native loop's step) on two revisions, alternated.

    .venv/bin/python -m bench.ab BEFORE [AFTER] [--pairs 8] [--cycles 200] [--store postgres]
    .venv/bin/python -m bench.ab BEFORE [AFTER] --case loop [--steps 1000] [--store sqlite]
    .venv/bin/python -m bench.ab BEFORE [AFTER] --case saver [--steps 1000] [--store sqlite]
    .venv/bin/python -m bench.ab BEFORE [AFTER] --case projector [--cycles 300] [--store sqlite]
    .venv/bin/python -m bench.ab BEFORE [AFTER] --case verify [--events 100000] [--store sqlite]

Each revision is checked out into a worktree of its own (`bench/.work/ab/REV`, made on
first use; AFTER defaults to the working tree itself) and runs from there on this
environment's packages: `python -m api.cli.main serve` with the worktree first on the
path, on a fresh store (a new PostgreSQL schema, or a new SQLite file) with an agent's and
a reviewer's key made by that revision's own `keys create`. One httpx client runs refund
cycles (`POST /threads`, `runs/wait` to the interrupt, `runs/wait` with the resume); the
first tenth are left out. The revisions alternate, BEFORE first in odd pairs, so that both
see the same machine. It prints each pair's median cycle time, their ratio (after /
before) and the server's CPU per cycle, and the median ratio: what BENCHMARKS.md's
"Design choices, measured" quotes.

`--case loop` times the native engine instead, in one process per measure with the
revision's tree first on the path: the counter loop of `bench/graphs.py` (`--steps`
supersteps, one event each) on a fresh store, three times after a warm-up, the median
time per step; the ratio is the CPU-and-commit cost of a step, with no HTTP around it.
`--case saver` runs the same loop on real LangGraph (`langgraph.graph`) with the
revision's HoldpointSaver over the fresh store.

`--case projector` times the read models' projector: on a fresh store, `--cycles` native
refund cycles (a thread begun, paused and answered) are recorded, then every read model is
rebuilt three times in batches of 3 positions, as small as a live projector's between
two commits; the measure is the process's CPU per cycle (`time.process_time`), the
median of the three.

`--case verify` times `holdpoint verify`'s check of the log in one process: on a fresh
store, `--events` events of refund cycles (as the verify benchmark generates them) are
inserted, then the whole log is checked three times by one process (`check_range`); the
measure is its CPU per event in microseconds (`time.process_time`), the median of the three.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.http import cpu_seconds, free_port
from bench.postgres import configured_url, connect, drop_schema, new_schema_name

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / ".work" / "ab"
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Sample:
    cycle_ms: float  # the median cycle
    cpu_ms: float  # the server's CPU per timed cycle


def worktree(revision: str) -> Path:
    """A worktree of `revision` (made once), or the working tree for '.'."""
    if revision == ".":
        return ROOT
    commit = subprocess.run(
        ["git", "rev-parse", "--short", revision],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path = WORK / commit
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), commit],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    return path


def _env(tree: Path, store: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(tree),
        "HOLDPOINT_STORE": store,
    }


def _key(tree: Path, store: str, principal: str, role: str) -> str:
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "api.cli.main",
            "keys",
            "create",
            "--principal",
            principal,
            "--role",
            role,
        ],
        cwd=tree,
        env=_env(tree, store),
        check=True,
        capture_output=True,
        text=True,
    )
    return made.stdout.strip().splitlines()[-1]


@contextmanager
def _store(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        path = folder / f"ab-{uuid.uuid4().hex[:8]}.db"
        try:
            yield f"sqlite:///{path}"
        finally:
            for leftover in (path, *path.parent.glob(f"{path.name}-*")):
                leftover.unlink(missing_ok=True)
        return
    server = connect()[0]
    if server is None:
        raise SystemExit(f"no PostgreSQL at {configured_url()}")
    schema = new_schema_name()
    try:
        yield server.holdpoint_url(schema)
    finally:
        drop_schema(server, schema)


def measure(tree: Path, kind: str, cycles: int, serve_args: list[str]) -> Sample:
    """One server of the revision in `tree` on a fresh store, one client's cycles."""
    with _store(kind, WORK) as store:
        agent = _key(tree, store, "agent", "agent")
        reviewer = _key(tree, store, "reviewer", "reviewer")
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "api.cli.main", "serve", "--port", str(port), *serve_args],
            cwd=tree,
            env=_env(tree, store),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url)
            times = []
            with httpx.Client(base_url=url, timeout=30) as client:
                warm = max(cycles // 10, 1)
                cpu_at = 0.0
                for n in range(cycles + warm):
                    if n == warm:
                        cpu_at = cpu_seconds(server.pid)
                    began = time.perf_counter()
                    _cycle(client, agent, reviewer)
                    if n >= warm:
                        times.append(time.perf_counter() - began)
                cpu = cpu_seconds(server.pid) - cpu_at
            return Sample(statistics.median(times) * 1000, cpu / cycles * 1000)
        finally:
            server.terminate()
            server.wait(30)


# The counter loop, on the native engine (`domain.graph` on the store) or on real
# LangGraph (`langgraph.graph` on HoldpointSaver over the store): the engine's import
# and the checkpointer are filled in (`_loop`).
LOOP = """
import statistics, sys, time
from ENGINE import END, START, StateGraph
from CHECKPOINTER_MODULE import CHECKPOINTER
from typing import TypedDict

class Counter(TypedDict):
    n: int

steps, url = int(sys.argv[1]), sys.argv[2]

def inc(state):
    return {"n": state["n"] + 1}

def route(state):
    return "inc" if state["n"] < steps else END

builder = StateGraph(Counter)
builder.add_node("inc", inc)
builder.add_edge(START, "inc")
builder.add_conditional_edges("inc", route, ["inc", END])
with CHECKPOINTER(url) as store:
    graph = builder.compile(checkpointer=store)
    limit = {"recursion_limit": steps + 10}
    graph.invoke({"n": 0}, {"configurable": {"thread_id": "warm"}, **limit})
    times = []
    for n in range(3):
        began = time.perf_counter()
        graph.invoke({"n": 0}, {"configurable": {"thread_id": f"loop-{n}"}, **limit})
        times.append((time.perf_counter() - began) / steps)
print(statistics.median(times) * 1000)
"""


def _loop(engine: str, module: str, checkpointer: str) -> str:
    return (
        LOOP.replace("CHECKPOINTER_MODULE", module)
        .replace("CHECKPOINTER", checkpointer)
        .replace("ENGINE", engine)
    )


NATIVE_LOOP = _loop("domain.graph", "domain.record.store", "open_store")
SAVER_LOOP = _loop("langgraph.graph", "langgraph.checkpoint.holdpoint", "HoldpointSaver")


PROJECTOR = """
import statistics, sys, time
from domain.graph import END, START, StateGraph
from domain.types import Command, interrupt
from domain.record.store import open_store
from projections.catalog import all_projections
from projections.runner import ProjectionRunner
from typing import TypedDict

class Refund(TypedDict):
    refund_amount: float
    approved: bool | None

cycles, url = int(sys.argv[1]), sys.argv[2]

def request_approval(state):
    return {"approved": interrupt({"question": f"Refund {state['refund_amount']}?"})}

builder = StateGraph(Refund)
builder.add_node("request_approval", request_approval)
builder.add_edge(START, "request_approval")
builder.add_edge("request_approval", END)
with open_store(url) as store:
    graph = builder.compile(checkpointer=store)
    for n in range(cycles):
        agent = {"thread_id": f"t-{n}", "actor": {"id": "agent", "role": "agent"}}
        graph.invoke({"refund_amount": n, "approved": None}, {"configurable": agent})
        reviewer = {"thread_id": f"t-{n}", "actor": {"id": "reviewer", "role": "reviewer"}}
        graph.invoke(Command(resume=True), {"configurable": reviewer})
    runner = ProjectionRunner(store, all_projections(), batch_size=3, rebuild_batch_size=3)
    times = []
    for n in range(3):
        began = time.process_time()
        runner.rebuild()
        times.append((time.process_time() - began) / cycles)
    runner.close()
print(statistics.median(times) * 1000)
"""


VERIFY = """
import gc, statistics, sys, time
from bench.integrity import fill
from domain.record.store import open_store
from integrity.ranges import ScanPlan, check_range
from integrity.scan import scanner_for

events, url = int(sys.argv[1]), sys.argv[2]
with open_store(url) as store:
    fill([store], events)
    scanner = scanner_for(store)
    times = []
    for n in range(3):
        gc.collect()
        began = time.process_time()
        summary = check_range(scanner, 0, events, ScanPlan())
        times.append((time.process_time() - began) / events)
        assert summary.events == events and not summary.suspects, summary.suspects
    scanner.close()
print(statistics.median(times) * 1e6)
"""


def measure_verify(tree: Path, kind: str, events: int) -> Sample:
    """One process's median CPU per event, in microseconds, checking a fresh log of
    `events` refund-cycle events with the revision in `tree`."""
    return _script_sample(tree, kind, VERIFY, events)


def measure_projector(tree: Path, kind: str, cycles: int) -> Sample:
    """The projector's median CPU per refund cycle, by the revision in `tree`, in batches
    of 3 positions on a fresh store (`cycle_ms` and `cpu_ms` are both that CPU)."""
    return _script_sample(tree, kind, PROJECTOR, cycles)


def measure_loop(tree: Path, kind: str, steps: int) -> Sample:
    """The native loop's median time per step, by the revision in `tree`, on a fresh store
    (no server: `cpu_ms` is the same time)."""
    return _script_sample(tree, kind, NATIVE_LOOP, steps)


def measure_saver(tree: Path, kind: str, steps: int) -> Sample:
    """The same loop on real LangGraph with the revision's HoldpointSaver: its median time
    per step on a fresh store (`cpu_ms` is the same time)."""
    return _script_sample(tree, kind, SAVER_LOOP, steps)


def _script_sample(tree: Path, kind: str, script: str, size: int) -> Sample:
    """`script` run by the revision in `tree` with `size` and a fresh store's URL; the
    milliseconds it prints last, as both measures."""
    WORK.mkdir(parents=True, exist_ok=True)
    with _store(kind, WORK) as store:
        done = subprocess.run(
            [sys.executable, "-c", script, str(size), store],
            cwd=tree,
            env=_env(tree, store),
            check=True,
            capture_output=True,
            text=True,
        )
    took_ms = float(done.stdout.strip().splitlines()[-1])
    return Sample(took_ms, took_ms)


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server at {url} did not start")


def _cycle(client: httpx.Client, agent: str, reviewer: str) -> None:
    thread = client.post(
        "/threads", json={"metadata": {"graph_id": "refund"}}, headers={"x-api-key": agent}
    )
    thread_id = thread.raise_for_status().json()["thread_id"]
    paused = (
        client.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund", "input": {"refund_amount": 250}},
            headers={"x-api-key": agent},
        )
        .raise_for_status()
        .json()
    )
    assert paused["__interrupt__"], paused
    done = (
        client.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": "refund", "command": {"resume": True}},
            headers={"x-api-key": reviewer},
        )
        .raise_for_status()
        .json()
    )
    assert "__interrupt__" not in done, done


def _measure(args: argparse.Namespace, tree: Path, serve_args: list[str]) -> Sample:
    if args.case == "loop":
        return measure_loop(tree, args.store, args.steps)
    if args.case == "saver":
        return measure_saver(tree, args.store, args.steps)
    if args.case == "projector":
        return measure_projector(tree, args.store, args.cycles)
    if args.case == "verify":
        return measure_verify(tree, args.store, args.events)
    return measure(tree, args.store, args.cycles, serve_args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("before", help="a git revision")
    parser.add_argument(
        "after", nargs="?", default=".", help="a git revision (default: the working tree)"
    )
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument(
        "--case", choices=("refund", "loop", "saver", "projector", "verify"), default="refund"
    )
    parser.add_argument(
        "--cycles", type=int, default=200, help="refund cycles per measure (refund, projector)"
    )
    parser.add_argument("--steps", type=int, default=1000, help="loop steps per measure")
    parser.add_argument("--events", type=int, default=100_000, help="log events (verify)")
    parser.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--no-projector", action="store_true", help="serve --no-projector (PostgreSQL)"
    )
    args = parser.parse_args(argv)
    trees = {"before": worktree(args.before), "after": worktree(args.after)}
    serve_args = ["--no-projector"] if args.no_projector else []
    ratios, cpu = [], []
    unit = "us/event" if args.case == "verify" else "ms"
    for pair in range(args.pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        got = {side: _measure(args, trees[side], serve_args) for side in order}
        ratio = got["after"].cycle_ms / got["before"].cycle_ms
        ratios.append(ratio)
        cpu.append(got["after"].cpu_ms / got["before"].cpu_ms)
        print(
            f"pair {pair + 1}: before {got['before'].cycle_ms:.3f} {unit} "
            f"(cpu {got['before'].cpu_ms:.2f}), after {got['after'].cycle_ms:.3f} {unit} "
            f"(cpu {got['after'].cpu_ms:.2f}): {ratio:.3f} x",
            flush=True,
        )
    print(
        f"median after/before: cycle {statistics.median(ratios):.3f} x, "
        f"server cpu {statistics.median(cpu):.3f} x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
