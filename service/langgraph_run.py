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

from langchain_core.messages import BaseMessageChunk
from langgraph.types import Command as LangGraphCommand

from domain.access.actor import resolve_actor
from domain.engine.runtime import REQUEST_KEY, UNREAD
from domain.errors import (
    InvalidUpdateError,
    OversightError,
    ThreadCancelledError,
    ThreadInterruptedError,
    ThreadNotFoundError,
)
from domain.oversight import hold_points
from domain.record.langgraph_record import LANGGRAPH, Caller
from domain.record.thread import WorkflowThread
from domain.record.thread_state import CANCELLED, INTERRUPTED
from domain.types import Command
from service.langgraph_app import SUBGRAPHS_KEY, LangGraphApp
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
        `guard`, which claims the thread in the same commit); nothing runs yet. A hold
        point's rule that refuses it raises OversightError, its refusal recorded (as the
        native engine's run does)."""
        try:
            return self._begin(graph_input, as_read, guard)
        except OversightError as error:
            request = (self.config.get("configurable") or {}).get(REQUEST_KEY)
            self.store.record_refusal(error, self.actor, "invoke", self.thread_id, request)
            raise

    def _begin(self, graph_input: Any, as_read: Any, guard: Any) -> list[Chunk]:
        thread = self.store.thread(self.thread_id) if as_read is UNREAD else as_read
        if thread is None:
            if isinstance(graph_input, Command) and graph_input.resume is not None:
                raise ThreadNotFoundError(self.thread_id)
            thread = self.app.start_thread(self.thread_id, self.config, self.actor)
            self.position = self.store.record(thread, guard=guard)
        else:
            thread.check_engine(LANGGRAPH)
            if thread.status == CANCELLED:
                raise ThreadCancelledError(self.thread_id)
        past = (self.config.get("configurable") or {}).get("checkpoint_id")
        if past:  # whatever the run brings, it goes on from there (as a native fork)
            self.app.check_may_branch(self.thread_id, str(past), self.actor)
        if isinstance(graph_input, Command):
            self.input = self._command(thread, graph_input, guard)
        elif graph_input is None:  # a continue, a takeover, or a run from a past checkpoint
            self.input = None if past else self._resume_of(thread)
        else:
            if thread.status == INTERRUPTED:
                raise ThreadInterruptedError(self.thread_id, list(thread.interrupts))
            self.input = graph_input
        thread.use_assistant(self.config.get("metadata") or {}, self.actor)
        if thread.pending_events:  # the run's assistant, recorded as the run claims the thread
            self.position = self.store.record(thread, guard=guard)
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
            if goto:  # as for a native graph: only where the graph itself starts a thread
                hold_points.check_goto(self.actor, goto, self.app.start_nodes())
            return LangGraphCommand(update=command.update, goto=goto or ())
        configurable = self.config.get("configurable") or {}
        caller = Caller(
            actor=self.actor,
            configured_run_id=self.run_id,
            decision=configurable.get("decision"),
            reason=configurable.get("reason"),
            idempotency_key=configurable.get("idempotency_key"),
            payload_digest=configurable.get("payload_digest"),
        )
        before = set(thread.interrupts)
        # A question asked before an edit LangGraph no longer holds: its node asks anew
        # when the thread goes on, so its answer is recorded and handed to none.
        held = {i for i in before if not thread.asked_before_an_edit(i)}
        thread.answer_resume(command.resume, caller, self.app.oversight)
        thread.use_assistant(self.config.get("metadata") or {}, self.actor)
        self.position = self.store.record(thread, guard=guard)
        answered = held - set(thread.interrupts)
        resume = {i: v for i, v in _answers(thread).items() if i in answered}
        return LangGraphCommand(resume=resume) if resume else None

    def _resume_of(self, thread: WorkflowThread) -> Any:
        """What a continue hands LangGraph: the answers on record that no node has consumed
        (a takeover of a run that answered), to the questions LangGraph still holds: not
        one asked before an edit, whose node asks anew; or nothing."""
        answers = _answers(thread)
        if answers:
            state = self.app.graph.get_state({"configurable": {"thread_id": self.thread_id}})
            held = {interrupt.id for interrupt in state.interrupts}
            answers = {i: value for i, value in answers.items() if i in held}
        return LangGraphCommand(resume=answers) if answers else None

    def run(self, emit: Callable[[list[Chunk]], None], lost: Callable[[], bool]) -> None:
        """Run the graph on LangGraph, each chunk emitted as it comes, shaped as LangGraph's
        server streams it (`StreamShaper`); stop, at the next chunk, once the run is
        `lost` (taken over)."""
        config = self.app.run_config(self.config)
        shaper = StreamShaper(self.modes)
        if "events" in self.modes:  # LangChain's event stream: async only
            asyncio.run(self._events(config, emit, lost))
        elif self.app.needs_async:
            asyncio.run(self._arun(config, shaper, emit, lost))
        else:
            graph: Any = self.app.graph  # LangGraph's overloads want literal stream modes
            for chunk in graph.stream(self.input, config, **self._options(shaper)):
                if lost():
                    break
                emit(shaper.shape(chunk))
        self._ended()

    def _options(self, shaper: StreamShaper) -> dict[str, Any]:
        return {
            "stream_mode": shaper.langgraph_modes,
            "subgraphs": bool(self.config.get(SUBGRAPHS_KEY)),
            "context": self.context,
        }

    async def _arun(
        self,
        config: dict[str, Any],
        shaper: StreamShaper,
        emit: Callable[[list[Chunk]], None],
        lost: Callable[[], bool],
    ) -> None:
        graph: Any = self.app.graph
        async for chunk in graph.astream(self.input, config, **self._options(shaper)):
            if lost():
                break
            emit(shaper.shape(chunk))

    async def _events(
        self, config: dict[str, Any], emit: Callable[[list[Chunk]], None], lost: Callable[[], bool]
    ) -> None:
        graph: Any = self.app.graph
        async for event in graph.astream_events(
            self.input, config, version="v2", context=self.context
        ):
            if lost():
                break
            emit([("events", langgraph_json(event))])

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


class StreamShaper:
    """LangGraph's stream chunks as LangGraph's server streams them: each mode asked for
    as its event (`mode`, or `mode|namespace` from a subgraph); `messages-tuple` as
    LangGraph's own `messages` (`[message, metadata]`); the server's `messages` as
    `messages/metadata` once per message, then `messages/partial` with the message so far
    while it streams, or `messages/complete` when it comes whole."""

    def __init__(self, modes: tuple[str, ...]) -> None:
        self.modes = modes or ("values",)
        wanted = ["messages" if mode.startswith("messages") else mode for mode in self.modes]
        self.langgraph_modes = list(dict.fromkeys(wanted))
        self._partial: dict[str, Any] = {}  # message id -> the message so far

    def shape(self, chunk: Any) -> list[Chunk]:
        """(mode, payload), or (namespace, mode, payload) from a subgraph."""
        namespace: tuple[str, ...] = ()
        if len(chunk) == 3:
            namespace, mode, payload = chunk
        else:
            mode, payload = chunk
        suffix = "".join(f"|{part}" for part in namespace)
        if mode != "messages":
            return [(f"{mode}{suffix}", langgraph_json(payload))]
        message, metadata = payload
        shaped: list[Chunk] = []
        if "messages-tuple" in self.modes:
            shaped.append(
                (f"messages{suffix}", [langgraph_json(message), langgraph_json(metadata)])
            )
        if "messages" in self.modes:
            shaped += self._accumulated(message, metadata, suffix)
        return shaped

    def _accumulated(self, message: Any, metadata: Any, suffix: str) -> list[Chunk]:
        key = str(getattr(message, "id", None) or id(message))
        shaped: list[Chunk] = []
        if key not in self._partial:
            shaped.append(
                (f"messages/metadata{suffix}", {key: {"metadata": langgraph_json(metadata)}})
            )
        if isinstance(message, BaseMessageChunk):
            so_far = self._partial.get(key)
            self._partial[key] = message if so_far is None else so_far + message
            shaped.append((f"messages/partial{suffix}", [langgraph_json(self._partial[key])]))
        else:
            self._partial[key] = message
            shaped.append((f"messages/complete{suffix}", [langgraph_json(message)]))
        return shaped
