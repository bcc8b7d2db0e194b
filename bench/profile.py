"""Profile one benchmark on one side with cProfile.

.venv/bin/python -m bench.profile loop --backend sqlite
.venv/bin/python -m bench.profile refund --backend memory --side LangGraph --top 30
.venv/bin/python -m bench.profile loop --backend postgres --sort tottime
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from functools import partial

from bench.backends import HOLDPOINT, Side, load_sides, scratch_dir
from bench.cases import build_loop_thread, loop_once, read_fresh, refund_once, storage_once
from bench.harness import QUICK, Measure, Settings
from bench.postgres import Server, connect


def _measure(case: str, backend: str, settings: Settings, server: Server | None) -> Measure:
    if case == "refund":
        return partial(refund_once, settings, backend, server=server)
    if case == "loop":
        return partial(loop_once, settings, backend, server=server)
    return partial(storage_once, settings)


def _profile_get_state(side: Side, settings: Settings, profiler: cProfile.Profile) -> str:
    """Profile only the get_state calls on freshly opened stores, not the build."""
    length = settings.state_lengths[1]
    with scratch_dir() as directory:
        path = directory / "bench.db"
        builder, config, _ = build_loop_thread(side, path, length)
        read_fresh(side, path, builder, config, length)  # warm-up
        for _ in range(settings.state_calls):
            profiler.runcall(read_fresh, side, path, builder, config, length)
    return f"{settings.state_calls} x (open a store, get_state twice) at {length:,} steps"


def main(argv: list[str] | None = None) -> int:
    """Warm up, then run one repetition under cProfile and print the top entries."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("case", choices=["refund", "loop", "get_state", "storage"])
    parser.add_argument(
        "--backend",
        choices=["memory", "sqlite", "postgres"],
        default="sqlite",
        help="refund and loop only; postgres uses HOLDPOINT_BENCH_POSTGRES_URL",
    )
    parser.add_argument("--side", default=HOLDPOINT, help="Holdpoint (default) or LangGraph")
    parser.add_argument("--top", type=int, default=15, help="entries to print (default 15)")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key")
    parser.add_argument("--quick", action="store_true", help="the --quick workload sizes")
    args = parser.parse_args(argv)

    sides, missing = load_sides()
    side = next((s for s in sides if s.name == args.side), None)
    if side is None:
        print(f"{args.side} is not available: {missing.get(args.side, 'unknown side')}")
        return 2
    server = None
    if args.backend == "postgres" and args.case in ("refund", "loop"):
        server, problem = connect()
        if server is None:
            print(f"PostgreSQL is not available: {problem}")
            return 2
    settings = QUICK if args.quick else Settings()
    profiler = cProfile.Profile()
    if args.case == "get_state":
        stats: object = _profile_get_state(side, settings, profiler)
    else:
        measure = _measure(args.case, args.backend, settings, server)
        measure(side, warm_up=True)
        stats = profiler.runcall(measure, side, warm_up=False)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.top)
    print(f"{side.name}, {args.case}, {args.backend}: {stats}")
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
