"""`holdpoint demo`: the seed refund story, end to end, on the configured store.

A refund above $100 pauses for a human; a named reviewer decides; the thread
finishes; then the demo shows the events the store recorded, with their hash
chain, and verifies the chain. It only calls the public API.
"""

from __future__ import annotations

import argparse
from typing import Any
from uuid import uuid4

from api.cli.options import Commands
from domain.graph import END, CompiledStateGraph
from domain.record.chain import ChainReport
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.types import Command
from service.refund_graph import build_graph

AGENT = {"id": "demo-agent", "role": "agent"}
REVIEWER = {"id": "demo-reviewer", "role": "reviewer"}
REASONS = {"approve": "Receipt checked, within policy.", "reject": "No receipt on file."}
SUMMARY_WIDTH = 60


def register(commands: Commands) -> None:
    """Add `demo` to the `holdpoint` subcommands."""
    demo = commands.add_parser(
        "demo",
        help="run the refund story end to end on the store, and show its events",
        description=(
            "Run the seed refund graph on the store: pause for approval, resume with a "
            "decision, show the recorded events with their hashes and verify the chain."
        ),
    )
    demo.add_argument("--amount", type=float, default=250.0, help="refund amount (default 250)")
    demo.add_argument(
        "--decision",
        choices=["approve", "reject"],
        default="approve",
        help="the reviewer's decision (default approve)",
    )
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    return run_demo(amount=args.amount, decision=args.decision)


def run_demo(amount: float = 250.0, decision: str = "approve") -> int:
    """Run one refund thread on the store from HOLDPOINT_STORE; 0 if its chain verifies."""
    with open_store() as store:
        graph = build_graph(store)
        thread_id = f"refund-{uuid4().hex[:8]}"
        print(f"Store {store.url}, thread {thread_id}\n")
        config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "actor": AGENT}}
        print(f"1. Agent {AGENT['id']!r} asks for a ${amount} refund.")
        result = graph.invoke({"refund_amount": amount}, config)
        if "__interrupt__" in result:
            show_pause(graph, config, result)
            result = resume(graph, thread_id, decision)
        else:
            print("   No approval needed: the graph ran to the end without pausing.")
        print(f"\nOutcome: {result['outcome']}\n")
        events = store.thread_events(thread_id)
        show_events(events)
        return show_verdict(store.verify_chain(thread_id))


def show_pause(graph: CompiledStateGraph, config: dict[str, Any], result: dict[str, Any]) -> None:
    print("2. The graph pauses for a human.")
    print(f"   Question: {question(result['__interrupt__'][0].value)}")
    for task in graph.get_state(config).tasks:
        for pending in task.interrupts:
            print(f"   Pending interrupt {pending.id} at node {task.name!r}")


def resume(graph: CompiledStateGraph, thread_id: str, decision: str) -> dict[str, Any]:
    reason = REASONS.get(decision, f"Decided: {decision}.")
    print(f"3. Reviewer {REVIEWER['id']!r} ({REVIEWER['role']}) decides: {decision}.")
    print(f"   Reason: {reason}")
    configurable = {
        "thread_id": thread_id,
        "actor": REVIEWER,
        "decision": decision,
        "reason": reason,
    }
    return graph.invoke(Command(resume=decision == "approve"), {"configurable": configurable})


def summarize(event: WorkflowThread.Event) -> str:
    """One line on what an event records."""
    match event:
        case WorkflowThread.ThreadStarted():
            text = f"graph {event.graph_id!r} started by {event.actor['id']}"
        case WorkflowThread.InputReceived():
            text = f"input {event.input} from {event.actor['id']}"
        case WorkflowThread.NodeCompleted():
            text = f"{event.node} -> {', '.join(event.routes) or END}: {event.update}"
        case WorkflowThread.InterruptRaised():
            text = f"{event.node} asks: {question(event.value)}"
        case WorkflowThread.InterruptResumed():
            text = f"{event.decision}={event.resume} by {event.actor['id']}: {event.reason}"
        case WorkflowThread.NodeFailed():
            text = f"{event.node} raised {event.error_type}: {event.message}"
        case WorkflowThread.ThreadCompleted():
            text = f"finished at step {event.step}"
        case _:
            text = ""
    return text if len(text) <= SUMMARY_WIDTH else text[: SUMMARY_WIDTH - 1] + "…"


def question(payload: Any) -> str:
    """The question an interrupt's payload asks, or the payload itself."""
    if isinstance(payload, dict) and "question" in payload:
        return str(payload["question"])
    return str(payload)


def show_events(events: list[WorkflowThread.Event]) -> None:
    print(f"Events recorded for the thread ({len(events)}):")
    row = "{:>3}  {:<16}  {:<" + str(SUMMARY_WIDTH) + "}  {:<12}  {:<12}"
    print(row.format("ver", "event", "summary", "prev_hash", "event_hash").rstrip())
    for event in events:
        name, hashes = type(event).__name__, (event.prev_hash[:12], event.event_hash[:12])
        print(row.format(event.originator_version, name, summarize(event), *hashes))


def show_verdict(report: ChainReport) -> int:
    if report.ok:
        print(f"\nChain verified: {report.events_checked} events, unbroken")
        return 0
    print(f"\nChain BROKEN at version {report.broken_at}: {report.problem}")
    return 1
