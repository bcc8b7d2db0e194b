"""One run of a real LangGraph graph, as the service runs it (service/runs.py).

It begins as a native run does, before any node code runs and under the same rules: a
cancelled thread takes nothing; new input waits until no interrupt is pending; an answer
(a `Command(resume=...)`, a decision) is checked by the hold points' rules, with the
authenticated actor, and recorded as `InterruptResumed` in the commit that claims the
thread (a guard): of two racing answers one wins, and a refused one records nothing but
its refusal. Then LangGraph runs the graph on HoldpointSaver, handed the recorded answers
as a resume map with LangGraph's own strict resume, and each chunk it streams goes to the
run's record as it comes.

A run taken over after its runner died continues from the thread's last checkpoint
(LangGraph keeps the writes of the tasks that finished), handed again the answers
recorded and not yet consumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langgraph.types import Command as LangGraphCommand

from domain.access.actor import resolve_actor
from domain.engine.runtime import UNREAD
from domain.errors import (
    InvalidUpdateError,
    ThreadCancelledError,
    ThreadInterruptedError,
    ThreadNotFoundError,
)
from domain.oversight import hold_points
from domain.record.langgraph_record import Caller
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED, INTERRUPTED
from domain.types import Command
from service.langgraph_app import LangGraphApp
from service.wire import langgraph_json

Chunk = tuple[str, Any]


class LangGraphRun:
    """One invoke/stream of a served LangGraph graph on a thread."""

    def __init__(
        self, app: LangGraphApp, config: dict[str, Any], modes: tuple[str, ...], context: Any
    ) -> None:
        configurable = config.get("configurable") or {}
        self.app = app
        self.graph = app
        self.config = config
        self.modes = modes
        self.context = context
        self.thread_id = str(configurable["thread_id"])
        self.actor = resolve_actor(configurable.get("actor"))
        self.run_id = str(configurable.get("run_id") or "")
        self.thread: WorkflowThread | None = None
        self.position: int | None = None
        self.input: Any = None

    @property
    def store(self) -> Any:
        return self.app.saver.store

    def begin(self, graph_input: Any, as_read: Any = UNREAD, guard: Any = None) -> list[Chunk]:
        """Check what the run was given against the thread, and record an answer (with
        `guard`, which claims the thread in the same commit); nothing runs yet."""
        thread = self.store.thread(self.thread_id) if as_read is UNREAD else as_read
        if thread is None:
            if isinstance(graph_input, Command) and graph_input.resume is not None:
                raise ThreadNotFoundError(self.thread_id)
            thread = self.app.start_thread(self.thread_id, self.config, self.actor)
            self.position = self.store.record(thread, guard=guard)
        elif thread.status == CANCELLED:
            raise ThreadCancelledError(self.thread_id)
        if isinstance(graph_input, Command):
            self.input = self._command(thread, graph_input, guard)
        elif graph_input is None:
            self.input = _resume_of(thread)  # a continue, or a takeover
        else:
            if thread.status == INTERRUPTED:
                raise ThreadInterruptedError(self.thread_id, list(thread.interrupts))
            self.input = graph_input
        self.thread = thread
        return []

    def _command(self, thread: WorkflowThread, command: Command[Any], guard: Any) -> Any:
        """A Command's answers recorded (checked first), its update and goto checked."""
        goto = command.goto_nodes()
        if command.update is not None or goto:
            if command.resume is not None:
                msg = (
                    "Command(resume=...) cannot also update or goto a real LangGraph graph's "
                    "thread: send the answer, then the change in a Command of its own"
                )
                raise InvalidUpdateError(msg)
            hold_points.check_may_change(
                thread, self.actor, self.app.oversight, "A Command(update=..., goto=...)"
            )
            return LangGraphCommand(update=command.update, goto=goto or ())
        configurable = self.config.get("configurable") or {}
        caller = Caller(
            actor=self.actor,
            run_id=self.run_id,
            decision=configurable.get("decision"),
            reason=configurable.get("reason"),
            idempotency_key=configurable.get("idempotency_key"),
            payload_digest=configurable.get("payload_digest"),
        )
        before = set(thread.interrupts)
        thread.answer_resume(command.resume, caller, self.app.oversight)
        self.position = self.store.record(thread, guard=guard)
        answered = before - set(thread.interrupts)
        return LangGraphCommand(resume={i: v for i, v in _answers(thread).items() if i in answered})

    def run(self, emit: Callable[[list[Chunk]], None], lost: Callable[[], bool]) -> None:
        """Run the graph on LangGraph, each chunk emitted as it comes; stop, at the next
        chunk, once the run is `lost` (taken over)."""
        config = self.app.run_config(self.config)
        modes = list(self.modes)
        subgraphs = bool((self.config.get("configurable") or {}).get("stream_subgraphs"))
        options: dict[str, Any] = {
            "stream_mode": modes or ["values"],
            "subgraphs": subgraphs,
            "context": self.context,
        }
        if self.app.needs_async:
            asyncio.run(self._arun(config, options, emit, lost))
        else:
            graph: Any = self.app.graph  # LangGraph's overloads want literal stream modes
            for chunk in graph.stream(self.input, config, **options):
                if lost():
                    break
                emit([_chunk(chunk, subgraphs)])
        self._ended()

    async def _arun(
        self,
        config: dict[str, Any],
        options: dict[str, Any],
        emit: Callable[[list[Chunk]], None],
        lost: Callable[[], bool],
    ) -> None:
        graph: Any = self.app.graph
        async for chunk in graph.astream(self.input, config, **options):
            if lost():
                break
            emit([_chunk(chunk, options["subgraphs"])])

    def _ended(self) -> None:
        self.thread = self.store.thread(self.thread_id)
        self.position = self.app.saver.position(self.thread_id) or self.position

    def result(self) -> dict[str, Any]:
        """The thread's values, and its pending interrupts, as the run left them."""
        state = self.app.graph.get_state({"configurable": {"thread_id": self.thread_id}})
        values = state.values if isinstance(state.values, dict) else {"__end__": state.values}
        output = dict(langgraph_json(values))
        if state.interrupts:
            output["__interrupt__"] = langgraph_json(list(state.interrupts))
        return output


def _answers(thread: WorkflowThread) -> dict[str, Any]:
    """The answers recorded on the thread that no node has consumed yet, by interrupt."""
    return {
        str(answer["interrupt_id"]): answer["resume"]
        for answers in thread.answers.values()
        for answer in answers
        if answer.get("interrupt_id")
    }


def _resume_of(thread: WorkflowThread) -> Any:
    """What a continue hands LangGraph: the answers not yet consumed (a takeover of a run
    that answered), or nothing."""
    answers = _answers(thread)
    return LangGraphCommand(resume=answers) if answers else None


def _chunk(chunk: Any, subgraphs: bool) -> Chunk:
    """LangGraph's stream chunk, `(mode, payload)` or from a subgraph `(namespace, mode,
    payload)`, as (event, JSON): the event is `mode`, or `mode|namespace`, as LangGraph's
    server names them."""
    namespace: tuple[str, ...] = chunk[0] if subgraphs else ()
    mode, payload = chunk[1:] if subgraphs else chunk
    event = mode if not namespace else f"{mode}|{'|'.join(namespace)}"
    return event, langgraph_json(payload)
