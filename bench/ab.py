"""A/B: the refund cycle over HTTP on two revisions of Holdpoint, alternated.

    .venv/bin/python -m bench.ab BEFORE [AFTER] [--pairs 8] [--cycles 200] [--store postgres]

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
        yield f"sqlite:///{folder / f'ab-{uuid.uuid4().hex[:8]}.db'}"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("before", help="a git revision")
    parser.add_argument(
        "after", nargs="?", default=".", help="a git revision (default: the working tree)"
    )
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--store", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument(
        "--no-projector", action="store_true", help="serve --no-projector (PostgreSQL)"
    )
    args = parser.parse_args(argv)
    trees = {"before": worktree(args.before), "after": worktree(args.after)}
    serve_args = ["--no-projector"] if args.no_projector else []
    ratios, cpu = [], []
    for pair in range(args.pairs):
        order = ("before", "after") if pair % 2 == 0 else ("after", "before")
        got = {side: measure(trees[side], args.store, args.cycles, serve_args) for side in order}
        ratio = got["after"].cycle_ms / got["before"].cycle_ms
        ratios.append(ratio)
        cpu.append(got["after"].cpu_ms / got["before"].cpu_ms)
        print(
            f"pair {pair + 1}: before {got['before'].cycle_ms:.2f} ms "
            f"(cpu {got['before'].cpu_ms:.2f}), after {got['after'].cycle_ms:.2f} ms "
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
