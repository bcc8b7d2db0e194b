"""`holdpoint history|state|diff|fork`: time travel on the command line.

All four read the store from HOLDPOINT_STORE, which must exist. The first
three only read: no node code runs, so a thread stays readable after its
graph's code changed or was deleted. A state folds its updates with the
state's reducers: the well-known ones (`operator.add`, ...) are built in, and
a graph's own reducers are known only when its code is given (`--graph`),
never looked up by a name read from the store (domain/record/schema.py). `fork`
writes one new thread and leaves the source's events untouched. User errors
(an unknown thread, a version out of range, a bad timestamp, an existing fork
id) print one line on stderr and exit with status 2, having changed nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog

from api.cli.options import (
    Commands,
    add_graph_option,
    add_json_option,
    load_graph_reducers,
    parse_moment,
)
from api.presenters.time_travel import diff_json, event_json, plain, state_json
from domain.access.actor import local_actor
from domain.access.keyring import Keyring
from domain.history.forks import fork_at_version
from domain.history.time_travel import (
    StateDiff,
    VersionEvent,
    VersionState,
    diff_versions,
    state_at_time,
    state_at_version,
    versions,
)
from domain.record.application import Workflows
from domain.record.store import open_store

if TYPE_CHECKING:
    from service.lineage import Lineage

# The read models (for the lineage of `history`, and the database driver under them)
# are imported by the handler that reads them, not with this module.
log = structlog.get_logger()
SUMMARY_WIDTH = 72


def register(commands: Commands) -> None:
    """Add `history`, `state`, `diff` and `fork` to the `holdpoint` subcommands."""
    history = commands.add_parser(
        "history",
        help="every version of a thread, its checkpoints, and its forks both ways",
        description=(
            "List a thread's versions, oldest first: each version's event, when it was "
            "recorded, and the checkpoint id of the versions that are checkpoints. Shows the "
            "thread it was forked from, if any, and the threads forked from it (from the "
            "thread index, brought up to date first). Runs no graph code."
        ),
    )
    history.add_argument("thread_id", metavar="THREAD", help="the thread's id")
    add_json_option(history, "print JSON instead of a table")
    add_graph_option(history)
    history.set_defaults(handler=show_history)

    state = commands.add_parser(
        "state",
        help="a thread's state at a version or a past moment (default: now)",
        description=(
            "Show a thread's values, next nodes, status and pending interrupts as they "
            "stood right after one version's event, and that event. Runs no graph code."
        ),
    )
    state.add_argument("thread_id", metavar="THREAD", help="the thread's id")
    when = state.add_mutually_exclusive_group()
    when.add_argument("--version", type=int, metavar="N", help="the version (1 is the first)")
    when.add_argument(
        "--at",
        metavar="TIMESTAMP",
        help="an ISO 8601 time (2025-03-01T09:30:00Z; UTC when no offset is given): "
        "the last version recorded at or before it",
    )
    add_json_option(state)
    add_graph_option(state)
    state.set_defaults(handler=show_state)

    diff = commands.add_parser(
        "diff",
        help="which state keys changed between two versions, with old and new values",
        description=(
            "Compare a thread's state at two versions. A and B are version numbers or "
            "checkpoint ids (as `holdpoint history` lists them). Runs no graph code."
        ),
    )
    diff.add_argument("thread_id", metavar="THREAD", help="the thread's id")
    diff.add_argument("a", metavar="A", help="the version (or checkpoint id) to compare from")
    diff.add_argument("b", metavar="B", help="the version (or checkpoint id) to compare to")
    add_json_option(diff)
    add_graph_option(diff)
    diff.set_defaults(handler=show_diff)

    fork = commands.add_parser(
        "fork",
        help="start a new thread from a thread's state at a version",
        description=(
            "Record a new thread that starts with ThreadForked (the source thread, the "
            "version and that version's event hash) and the state as it stood then. "
            "Forked inside a pause, the interrupts pending then are raised again on the "
            "new thread, as new pending approvals. The source thread is not changed. "
            "Runs no graph code: continue the new thread through the API. A fork at a "
            "version inside the run a decision began (after the answer, before the run "
            "ended) would run on under that decision, so it needs the API key of a "
            "principal who may decide it (--api-key, or HOLDPOINT_API_KEY); it is "
            "recorded as that principal's. Without a key the fork is recorded as the "
            "local user's, with no role, and such a fork is refused (exit 2, the "
            "refusal on record). A real LangGraph graph's thread is forked with its "
            "checkpoints, only at a version where it was at rest (not paused at a "
            "question, not in the middle of a run; exit 2 otherwise)."
        ),
    )
    fork.add_argument("thread_id", metavar="THREAD", help="the thread to fork")
    fork.add_argument(
        "--version", type=int, required=True, metavar="N", help="the version to fork at"
    )
    fork.add_argument(
        "--as",
        dest="new_id",
        metavar="NEW_ID",
        help="the new thread's id (default THREAD~N, then THREAD~N.2, ...)",
    )
    fork.add_argument(
        "--api-key",
        metavar="KEY",
        default=os.environ.get("HOLDPOINT_API_KEY"),
        help="act as this key's principal (default: $HOLDPOINT_API_KEY; none: the local "
        "user, with no role)",
    )
    add_json_option(fork)
    add_graph_option(fork)
    fork.set_defaults(handler=run_fork)


@contextmanager
def _reading(args: argparse.Namespace) -> Iterator[Workflows]:
    """The store (which must exist), with the reducers of the graphs given registered."""
    with open_store(existing=True) as store:
        load_graph_reducers(args.graph, store)
        yield store


# -- handlers ---------------------------------------------------------------


def show_history(args: argparse.Namespace) -> int:
    from projections.catalog import runner_for  # noqa: PLC0415
    from service.lineage import lineage, lineage_json  # noqa: PLC0415

    with _reading(args) as store:
        found = versions(store, args.thread_id)
        runner = runner_for(store)
        try:
            runner.catch_up()
            links = lineage(store, runner.db, args.thread_id)
        finally:
            runner.close()
        current = state_at_version(store, args.thread_id)
    if args.json:
        body = {
            **lineage_json(links),
            "graph_id": current.graph_id,
            "graph_digest": found[0].data.get("graph_digest"),
            "status": current.status,
            "versions": [{**event_json(e), "summary": describe(e)} for e in found],
        }
        _say(json.dumps(body, indent=2))
        return 0
    _say(
        f"Thread {args.thread_id} · graph {current.graph_id} · status {current.status} · "
        f"{len(found)} versions"
    )
    _say(f"Graph digest at start: {found[0].data.get('graph_digest')}")
    for line in _lineage_lines(links):
        _say(line)
    _say(f"{'VERSION':>7}  {'RECORDED (UTC)':<19}  {'EVENT':<16}  {'CHECKPOINT':<36}  SUMMARY")
    for event in found:
        _say(
            f"{event.version:>7}  {_utc(event.timestamp)}  {event.type:<16}  "
            f"{event.checkpoint_id or '-':<36}  {describe(event)}"
        )
    return 0


def show_state(args: argparse.Namespace) -> int:
    with _reading(args) as store:
        if args.at is not None:
            state = state_at_time(store, args.thread_id, parse_moment("--at", args.at))
        else:
            state = state_at_version(store, args.thread_id, args.version)
    if args.json:
        _say(json.dumps(state_json(state), indent=2))
    else:
        _print_state(state)
    return 0


def show_diff(args: argparse.Namespace) -> int:
    with _reading(args) as store:
        diff = diff_versions(store, args.thread_id, args.a, args.b)
    if args.json:
        _say(json.dumps(diff_json(diff), indent=2))
    else:
        _print_diff(diff)
    return 0


def cli_actor(store: Workflows, api_key: str | None) -> dict[str, Any]:
    """Who a command acts as: the API key's principal, or the local user with no role
    (which the hold points' rules bind, unlike a Python caller's:
    domain/oversight/hold_points.py)."""
    if api_key:
        return Keyring(store).authenticate(api_key).as_actor()
    return {**local_actor(), "via": "cli"}


def run_fork(args: argparse.Namespace) -> int:
    with _reading(args) as store:
        actor = cli_actor(store, args.api_key)
        result = fork_at_version(
            store, args.thread_id, args.version, actor, new_thread_id=args.new_id
        )
    log.info(
        "thread forked",
        thread_id=result.thread_id,
        source_thread_id=result.source_thread_id,
        source_version=result.source_version,
        reraised=result.reraised,
    )
    if args.json:
        _say(json.dumps(plain(vars(result)), indent=2))
        return 0
    _say(
        f"Forked {result.source_thread_id} at version {result.source_version} as "
        f"{result.thread_id} (source event {result.source_hash[:16]})."
    )
    for interrupt_id in result.reraised:
        _say(f"Raised again on {result.thread_id}: interrupt {interrupt_id}, pending approval.")
    return 0


# -- reading the arguments and writing the answers --------------------------


def describe(event: VersionEvent) -> str:
    """One short line on what an event records."""
    data = event.data
    who = (data.get("actor") or {}).get("id") or "someone"
    text = {
        "ThreadStarted": f"{who} started it on graph {data.get('graph_id')!r}",
        "ThreadForked": f"{who} forked it from {data.get('source_thread_id')!r} "
        f"at version {data.get('source_version')}",
        "InputReceived": f"{who} sent {_compact(data.get('input'))}",
        "NodeCompleted": f"{data.get('node')} -> {', '.join(data.get('routes') or []) or 'end'}"
        f"  {_compact(data.get('update'))}",
        "NodeFailed": f"{data.get('node')} failed: {data.get('error_type')}: {data.get('message')}",
        "InterruptRaised": f"{data.get('node')} asks {_compact(data.get('value'))}",
        "InterruptResumed": f"{who} decided {data.get('decision')}: {_compact(data.get('resume'))}",
        "InterruptApproved": f"{who} approved ({data.get('approvals')} of {data.get('needed')})",
        "InterruptExpired": f"deadline passed ({(data.get('rule') or {}).get('action')})",
        "InterruptAssigned": f"{who} assigned it to {data.get('reviewer_id') or 'no one'}",
        "StateEdited": f"{who} edited {_compact(data.get('values'))}",
        "ThreadCompleted": "the run reached the end",
        "ThreadFailed": f"the run failed: {data.get('error_type')}: {data.get('message')}",
        "ThreadCancelled": f"{who} cancelled it",
        "RunCancelled": f"{who} cancelled run {data.get('run_id')}",
        "MetadataUpdated": f"{who} set metadata {_compact(data.get('metadata'))}",
        "CheckpointSaved": f"{data.get('source')} checkpoint{_in(data)} at step "
        f"{data.get('step')}, next: {', '.join(data.get('next') or []) or '-'}",
        "WritesSaved": f"writes{_in(data)}: "
        + ", ".join(str(write[0]) for write in data.get("writes") or []),
    }.get(event.type, event.type)
    return text if len(text) <= SUMMARY_WIDTH else text[: SUMMARY_WIDTH - 1] + "…"


def _in(data: dict[str, Any]) -> str:
    """Where a LangGraph save is, when not the root graph: ` in <namespace>`."""
    return f" in {data['namespace']}" if data.get("namespace") else ""


def _lineage_lines(links: Lineage) -> list[str]:
    lines = []
    origin = links.forked_from
    if origin is not None:
        lines.append(
            f"Forked from {origin.thread_id} at version {origin.version} "
            f"(event {origin.event_hash[:16]})"
        )
    if links.forks:
        forks = ", ".join(f"{f.thread_id} (at version {f.version})" for f in links.forks)
        lines.append(f"Forks: {forks}")
    return lines


def _print_state(state: VersionState) -> None:
    event = state.event
    _say(
        f"Thread {state.thread_id} at version {state.version} of {state.head} "
        f"({event.type}, recorded {_utc(event.timestamp)} UTC)"
    )
    _say(f"status      {state.status}")
    _say(f"next        {', '.join(state.next) or '-'}")
    _say(f"checkpoint  {state.checkpoint_id or '-'}")
    for pending in state.interrupts:
        _say(f"interrupt   {pending['id']} ({pending['node']}): {_compact(pending['value'])}")
    _say("values")
    _say(json.dumps(state.values, indent=2))


def _print_diff(diff: StateDiff) -> None:
    count = len(diff.changes)
    _say(
        f"Thread {diff.thread_id}, version {diff.from_version} -> {diff.to_version}: "
        f"{count} key{'s' if count != 1 else ''} changed"
    )
    for change in diff.changes:
        if change.change == "added":
            _say(f"+ {change.key}: {_compact(change.new)}")
        elif change.change == "removed":
            _say(f"- {change.key}: {_compact(change.old)}")
        else:
            _say(f"~ {change.key}: {_compact(change.old)} -> {_compact(change.new)}")
    if diff.next_from != diff.next_to:
        _say(f"next: {', '.join(diff.next_from) or '-'} -> {', '.join(diff.next_to) or '-'}")
    if diff.status_from != diff.status_to:
        _say(f"status: {diff.status_from} -> {diff.status_to}")


def _compact(value: Any) -> str:
    return json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
