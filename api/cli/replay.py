"""`holdpoint replay`: today's node code against recorded threads, writing nothing.

`holdpoint replay THREAD` replays one thread on the graph it ran;
`holdpoint replay --all` every thread of the graphs loaded (named with
`--graph NAME=path.py:attr`, else the seed examples), with a progress bar and
a summary: the check to run before deploying a new version of a graph's
code. Exit status: 0 when every step matches the record, 1 when something
diverges, 2 on a user error (an unknown thread or graph, a bad --graph).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from api.cli.options import Commands, UsageError, add_graph_option, add_json_option
from api.cli.progress import ProgressBar
from api.presenters.time_travel import replay_json
from domain.engine.replay import ReplayReport, replay_thread, threads_by_graph
from domain.errors import HoldpointError
from domain.graph import CompiledStateGraph
from domain.history.time_travel import head_version
from domain.record.application import Workflows
from domain.record.langgraph_record import LANGGRAPH
from domain.record.store import open_store

if TYPE_CHECKING:
    from service.runs import ServedGraph

log = structlog.get_logger()
DIVERGED = 1


def register(commands: Commands) -> None:
    """Add `replay` to the `holdpoint` subcommands."""
    replay = commands.add_parser(
        "replay",
        help="re-run today's node code on recorded threads and report any drift",
        description=(
            "Re-execute a thread's node code against its recorded inputs and resume values, "
            "step by step, and report where today's code diverges from the record (another "
            "update, another route, an interrupt that no longer fires or a new one, a new "
            "failure) or that it matches; also the graph digest recorded at the thread's start "
            "against today's. Writes nothing to the store, but the nodes' code really runs: "
            "side effects in it happen again. Exit status 0: everything matches; 1: something "
            "diverges, or a thread could not be replayed; 2: a user error."
        ),
    )
    replay.add_argument("thread_id", nargs="?", metavar="THREAD", help="the thread to replay")
    replay.add_argument(
        "--all",
        action="store_true",
        help="replay every thread of every graph loaded, with progress and a summary",
    )
    add_graph_option(replay, "today's code for graph NAME (repeatable); default: the seed examples")
    add_json_option(replay)
    replay.set_defaults(handler=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    if bool(args.thread_id) == bool(args.all):
        msg = "replay needs one THREAD, or --all (not both)"
        raise UsageError(msg)
    # here, not with the module: the graph loader brings LangGraph (about 0.7 s), which
    # every other command's start, and `holdpoint --help`, would pay
    from service.graph_loader import load_graphs, parse_graph_spec  # noqa: PLC0415

    sources = [parse_graph_spec(spec) for spec in args.graph]
    with open_store(existing=True) as store:
        graphs = native_graphs(load_graphs(sources, store))
        if args.all:
            return _replay_all(store, graphs, as_json=args.json)
        return _replay_one(store, graphs, args.thread_id, as_json=args.json)


def native_graphs(graphs: dict[str, ServedGraph]) -> dict[str, CompiledStateGraph]:
    """The native graphs of those loaded: replay re-executes the native engine's nodes
    against the record; a real LangGraph graph's thread is read back, not replayed."""
    return {name: graph for name, graph in graphs.items() if isinstance(graph, CompiledStateGraph)}


def _replay_one(
    store: Workflows, graphs: dict[str, CompiledStateGraph], thread_id: str, *, as_json: bool
) -> int:
    head_version(store, thread_id)  # ThreadNotFoundError first
    thread = store.thread(thread_id)
    assert thread is not None
    graph = graphs.get(thread.graph_id)
    if thread.engine == LANGGRAPH:
        msg = (
            f"Thread {thread_id!r} ran a real LangGraph graph ({thread.graph_id!r}): replay "
            "re-executes the native engine's nodes; read its record with `holdpoint history`"
        )
        raise UsageError(msg)
    if graph is None:
        msg = (
            f"Thread {thread_id!r} ran graph {thread.graph_id!r}, which is not loaded "
            f"(loaded: {', '.join(sorted(graphs)) or 'none'}); name its code with "
            f"--graph {thread.graph_id}=path/to/file.py:attr"
        )
        raise UsageError(msg)
    report = _replay(store, graph, thread_id)
    if as_json:
        _say(json.dumps(replay_json(report), indent=2))
    else:
        _print_report(report)
    return 0 if report.matches else DIVERGED


@dataclass
class _Summary:
    reports: list[ReplayReport] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def diverging(self) -> list[ReplayReport]:
        return [report for report in self.reports if not report.matches]


def _replay_all(store: Workflows, graphs: dict[str, CompiledStateGraph], *, as_json: bool) -> int:
    recorded = threads_by_graph(store)
    threads = {name: recorded.get(name, []) for name in sorted(graphs)}
    total = sum(map(len, threads.values()))
    summary, done = _Summary(), 0
    bar = ProgressBar()
    for name, thread_ids in threads.items():
        for thread_id in thread_ids:
            try:
                summary.reports.append(_replay(store, graphs[name], thread_id))
            except HoldpointError as error:  # e.g. a reducer this process cannot resolve
                summary.errors[thread_id] = f"{type(error).__name__}: {error}"
            done += 1
            bar("replay", done, total)
    bar.finish()
    log.info(
        "replay finished",
        threads=total,
        diverging=len(summary.diverging),
        errors=len(summary.errors),
    )
    if as_json:
        body = {
            "threads": total,
            "matching": total - len(summary.diverging) - len(summary.errors),
            "diverging": [report.thread_id for report in summary.diverging],
            "errors": summary.errors,
            "reports": [replay_json(report) for report in summary.reports],
        }
        _say(json.dumps(body, indent=2))
    else:
        _print_summary(summary, threads, total)
    return DIVERGED if summary.diverging or summary.errors else 0


def _replay(store: Workflows, graph: CompiledStateGraph, thread_id: str) -> ReplayReport:
    # A node's prints go to stderr: stdout is for the report.
    with contextlib.redirect_stdout(sys.stderr):
        return replay_thread(store.iter_thread_events(thread_id), graph)


def _print_report(report: ReplayReport) -> None:
    _say(f"Replaying thread {report.thread_id} (graph {report.graph_id}) on today's code")
    _say(_digest_line(report))
    if report.steps:
        _say(f"{'VERSION':>7}  {'STEP':>4}  {'NODE':<20}  {'VERDICT':<19}  DETAIL")
    for step in report.steps:
        _say(
            f"{step.version:>7}  {step.step:>4}  {step.node:<20}  {step.verdict:<19}  {step.detail}"
        )
    count = len(report.steps)
    if report.matches:
        _say(f"Matches the record: {count} step{'s' if count != 1 else ''}, no divergence.")
    else:
        _say(f"Diverges from the record at {len(report.divergences)} of {count} steps.")


def _digest_line(report: ReplayReport) -> str:
    same = "same code" if report.digest_matches else "the code changed since the thread started"
    return (
        f"Graph digest: recorded {report.recorded_digest[:12]}, "
        f"today {report.current_digest[:12]} ({same})"
    )


def _print_summary(summary: _Summary, threads: dict[str, list[str]], total: int) -> None:
    graphs = ", ".join(f"{name} ({len(ids)})" for name, ids in threads.items())
    matching = total - len(summary.diverging) - len(summary.errors)
    _say(f"Replayed {total} threads of {graphs or 'no graph'}")
    _say(f"{matching} match, {len(summary.diverging)} diverge, {len(summary.errors)} failed")
    changed = [r for r in summary.reports if not r.digest_matches]
    if changed:
        _say(f"{len(changed)} ran code other than today's (their recorded graph digest differs)")
    for report in summary.diverging:
        first = report.divergences[0]
        _say(
            f"  {report.thread_id} ({report.graph_id}): version {first.version}, "
            f"{first.verdict}: {first.detail}"
            + (f" (+{len(report.divergences) - 1} more)" if len(report.divergences) > 1 else "")
        )
    for thread_id, error in summary.errors.items():
        _say(f"  {thread_id}: could not replay: {error}")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
