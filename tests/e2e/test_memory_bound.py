"""A server's memory is bounded: 50,000 refund cycles through `holdpoint serve`, and its
resident size levels off under the bound the README states.

What a server keeps in memory grows with what it served only up to a cap: the records
of its last `runs_kept` runs (service/runs.py), the projector's directory of threads
(projections/threads.py, 100,000 at most) and fixed-size caches. Everything else is in
the store. The test runs the seeds' refund graph with a small `runs_kept`, so that the
run records reach their cap early, and reads the server's resident set from /proc.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx

from tests.e2e.test_crash_recovery import make_key
from tests.serving import Serving

CYCLES = 50_000
CLIENTS = 4
RUNS_KEPT = 1_000
# The bound: what a run record, and a thread in the projector's directory, may cost at most
# (README, "Memory"), over the server's size once it has served its first runs.
RUN_RECORD_BYTES = 6_000
THREAD_BYTES = 800
SLACK_BYTES = 24 * 2**20  # allocator fragmentation, the database's page caches, warm-up
WARM_UP = 500
CONFIG = f"""
[server]
runs_kept = {RUNS_KEPT}
run_rate_limit = 0
decision_rate_limit = 0
"""


def resident_bytes(pid: int) -> tuple[int, int]:
    """The process's resident set now and at its peak (VmRSS, VmHWM), in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


def refund_cycles(url: str, agent: str, reviewer: str, cycles: int) -> None:
    """`cycles` refund cycles: a thread, its run to the review, the reviewer's approval."""
    with (
        httpx.Client(base_url=url, headers={"x-api-key": agent}, timeout=60) as starter,
        httpx.Client(base_url=url, headers={"x-api-key": reviewer}, timeout=60) as decider,
    ):
        for _ in range(cycles):
            thread_id = starter.post("/threads", json={}).json()["thread_id"]
            paused = starter.post(
                f"/threads/{thread_id}/runs/wait",
                json={"assistant_id": "refund", "input": {"refund_amount": 250.0}},
            ).json()
            assert "__interrupt__" in paused, paused
            done = decider.post(
                f"/threads/{thread_id}/runs/wait",
                json={"assistant_id": "refund", "command": {"resume": True}},
            ).json()
            assert done["outcome"].startswith("Refund of $250"), done


def concurrently(url: str, agent: str, reviewer: str, cycles: int) -> None:
    failures: list[BaseException] = []

    def client() -> None:
        try:
            refund_cycles(url, agent, reviewer, cycles // CLIENTS)
        except BaseException as error:  # reported below, with the client's traceback
            failures.append(error)

    clients = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for each in clients:
        each.start()
    for each in clients:
        each.join()
    if failures:
        raise failures[0]


def test_fifty_thousand_cycles_stay_under_the_stated_bound(tmp_path):
    # Given a server on a SQLite file keeping the records of its last 1,000 runs
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    config = tmp_path / "holdpoint.toml"
    config.write_text(CONFIG)
    agent = make_key(store, "memory-agent", "agent")
    reviewer = make_key(store, "memory-reviewer", "reviewer")
    server = Serving(store, "--config", str(config))
    try:
        [docs] = [line for line in server.banner("  API docs:") if "API docs:" in line]
        url = docs.split()[-1].removesuffix("/docs")
        concurrently(url, agent, reviewer, WARM_UP)
        start, _ = resident_bytes(server.process.pid)
        # When 50,000 refund cycles (100,000 runs, 50,000 threads) go through it
        concurrently(url, agent, reviewer, CYCLES // 2)
        halfway, _ = resident_bytes(server.process.pid)
        concurrently(url, agent, reviewer, CYCLES // 2)
        end, peak = resident_bytes(server.process.pid)
    finally:
        server.stop()
    # Then its size never went past the bound: the run records it keeps, the threads its
    # projector knows, and a fixed slack, over its size after the warm-up
    threads = WARM_UP + CYCLES
    bound = start + RUNS_KEPT * RUN_RECORD_BYTES + threads * THREAD_BYTES + SLACK_BYTES
    assert peak <= bound, f"peak {peak / 2**20:.0f} MiB > bound {bound / 2**20:.0f} MiB"
    # And the second 25,000 cycles, with the run records at their cap, grew it by at most
    # what their threads cost the directory: nothing else grows with the runs served
    assert end - halfway <= CYCLES // 2 * THREAD_BYTES + SLACK_BYTES // 4, (
        f"grew {(end - halfway) / 2**20:.1f} MiB in the second half"
    )
