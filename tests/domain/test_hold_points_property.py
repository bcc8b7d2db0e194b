"""A property of hold points, over random histories of starts, edits, edits as_node,
forks, runs, commands and decisions by random principals of every role:

- no node past a hold point ever runs with an answer given to a different question
  (each answer is a token; the node logs the question it asked and the token it got);
- every answer a node applied is recorded with the digest of the question it answered;
- every refused attempt is on record, and a refusal records that and nothing else.
"""

from __future__ import annotations

from typing import Any, TypedDict

from eventsourcing.utils import get_topic
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from domain.access.identity import RefusedAttempt
from domain.checkpoint.memory import InMemorySaver
from domain.errors import HoldpointError, OversightError
from domain.graph import CompiledStateGraph
from domain.oversight.hold_points import question_digest
from domain.record.thread import WorkflowThread
from domain.types import Command, interrupt
from tests.graphs import linear_graph

PRINCIPALS = {
    "amy": "agent",
    "ann": "agent",
    "rita": "reviewer",
    "rob": "reviewer",
    "ada": "admin",
    "aud": "auditor",
}
AMOUNTS = (50.0, 250.0, 300.0)


class Payment(TypedDict):
    amount: float
    answer: Any
    paid: Any


def payment_graph(store: Any, asked: list[tuple[str, Any]]) -> CompiledStateGraph:
    """START -> ask -> pay -> END; `ask` logs the digest of the question it asked and
    the answer it received."""

    def ask(state: Payment) -> dict[str, Any]:
        question = {"pay": state["amount"]}
        answer = interrupt(question)
        asked.append((question_digest(question), answer))
        return {"answer": answer}

    def pay(state: Payment) -> dict[str, Any]:
        return {"paid": state["amount"]}

    return linear_graph(store, Payment, ask, pay, name="payment")


principals = st.sampled_from(sorted(PRINCIPALS))
threads = st.integers(0, 2)
amounts = st.sampled_from(AMOUNTS)
decisions = st.tuples(
    st.just("decide"), principals, threads, st.sampled_from(["respond", "respond", "approve"])
)
edits = st.tuples(st.just("edit"), principals, threads, amounts)
operations = st.one_of(  # decisions and edits twice: a re-asked question needs both
    st.tuples(st.just("start"), principals, amounts),
    st.tuples(st.just("continue"), principals, threads),
    edits,
    edits,
    st.tuples(st.just("edit_as_node"), principals, threads, st.sampled_from(["ask", "pay"])),
    st.tuples(st.just("fork"), principals, threads, st.integers(0, 9), st.none() | amounts),
    decisions,
    decisions,
    st.tuples(st.just("command"), principals, threads, amounts),
    st.tuples(st.just("goto_pay"), principals, threads),
)


class History:
    """Applies operations to a memory store, keeping what the property needs."""

    def __init__(self) -> None:
        self.store = InMemorySaver()
        self.asked: list[tuple[str, Any]] = []
        self.graph = payment_graph(self.store, self.asked)
        self.thread_ids: list[str] = []
        self.tokens: dict[int, str] = {}  # token -> digest of the question it answered
        self.refused = 0

    def config(self, who: str, thread_id: str, **more: Any) -> dict[str, Any]:
        actor = {"id": who, "role": PRINCIPALS[who]}
        return {"configurable": {"thread_id": thread_id, "actor": actor, **more}}

    def thread_of(self, n: int) -> str | None:
        return self.thread_ids[n % len(self.thread_ids)] if self.thread_ids else None

    def apply(self, operation: tuple[Any, ...]) -> None:
        kind, who, *rest = operation
        if kind == "start":
            thread_id = f"t{len(self.thread_ids)}"
            self.thread_ids.append(thread_id)
            self.attempt(
                lambda: self.graph.invoke({"amount": rest[0]}, self.config(who, thread_id))
            )
            return
        thread_id = self.thread_of(rest[0])
        if thread_id is None:
            return
        config = self.config(who, thread_id)
        if kind == "continue":
            self.attempt(lambda: self.graph.invoke(None, config))
        elif kind == "edit":
            self.attempt(lambda: self.graph.update_state(config, {"amount": rest[1]}))
        elif kind == "edit_as_node":
            with_reason = self.config(who, thread_id, reason="by hand")
            values = {"answer": "as node"}
            self.attempt(lambda: self.graph.update_state(with_reason, values, as_node=rest[1]))
        elif kind == "fork":
            self.fork(who, thread_id, rest[1], rest[2])
        elif kind == "decide":
            self.decide(who, thread_id, rest[1])
        elif kind == "command":
            command = Command(update={"amount": rest[1]}, goto="ask")
            self.attempt(lambda: self.graph.invoke(command, config))
        elif kind == "goto_pay":  # past the hold point: refused for every named actor
            self.attempt(lambda: self.graph.invoke(Command(goto="pay"), config))

    def fork(self, who: str, thread_id: str, pick: int, amount: float | None) -> None:
        history = list(self.graph.get_state_history({"configurable": {"thread_id": thread_id}}))
        if not history:
            return
        checkpoint = history[pick % len(history)].config["configurable"]["checkpoint_id"]
        config = self.config(who, thread_id, checkpoint_id=checkpoint)
        if amount is None:
            self.attempt(lambda: self.graph.invoke(None, config))
        else:
            self.attempt(lambda: self.graph.update_state(config, {"amount": amount}))

    def decide(self, who: str, thread_id: str, decision: str) -> None:
        thread = self.store.thread(thread_id)
        if thread is None or not thread.interrupts:
            return
        interrupt_id, record = next(iter(thread.interrupts.items()))
        token = len(self.tokens)
        value = {"token": token} if decision == "respond" else True
        config = self.config(who, thread_id, decision=decision)
        if self.attempt(lambda: self.graph.invoke(Command(resume={interrupt_id: value}), config)):
            self.tokens[token] = record["digest"]

    def attempt(self, call: Any) -> bool:
        """Run `call`; an error Holdpoint raises on purpose is an outcome, not a failure.
        A refusal must add exactly one event to the log: its AccessRefused."""
        before = self.store.recorder.max_notification_id() or 0
        try:
            call()
        except OversightError:
            self.refused += 1
            after = self.store.recorder.max_notification_id() or 0
            assert after == before + 1, "a refusal records its AccessRefused and nothing else"
            return False
        except HoldpointError:
            return False
        return True

    def recorded_refusals(self) -> int:
        notifications = self.store.recorder.select_notifications(start=1, limit=100_000)
        topic = get_topic(RefusedAttempt.AccessRefused)
        return sum(1 for n in notifications if n.topic == topic)

    def thread_events(self) -> list[Any]:
        return [e for t in self.thread_ids for e in self.store.thread_events(t)] + [
            e for t in self.forks() for e in self.store.thread_events(t)
        ]

    def forks(self) -> list[str]:
        notifications = self.store.recorder.select_notifications(start=1, limit=100_000)
        forked = [n for n in notifications if n.topic.endswith("WorkflowThread.ThreadForked")]
        return [self.store.mapper.to_domain_event(n).thread_id for n in forked]


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(operations, min_size=1, max_size=30))
# The attacks of issue 19 as histories, besides the ones hypothesis draws:
@example([("start", "amy", 250.0), ("edit", "rita", 0, 300.0), ("decide", "rob", 0, "respond")])
@example([("start", "amy", 250.0), ("edit", "amy", 0, 300.0), ("decide", "rob", 0, "respond")])
@example([("start", "amy", 250.0), ("edit_as_node", "amy", 0, "ask"), ("continue", "amy", 0)])
@example([("start", "amy", 250.0), ("decide", "rita", 0, "respond"), ("fork", "amy", 0, 1, 300.0)])
@example([("start", "amy", 250.0), ("fork", "rob", 0, 0, 300.0), ("decide", "rita", 1, "respond")])
@example([("start", "amy", 250.0), ("command", "ann", 0, 300.0), ("decide", "ada", 0, "respond")])
@example([("start", "amy", 250.0), ("decide", "rita", 0, "respond"), ("goto_pay", "amy", 0)])
# A finished thread sent back past its hold point by an admin's edit as_node, with a reason
@example(
    [
        ("start", "amy", 50.0),
        ("decide", "ada", 0, "respond"),
        ("edit_as_node", "ada", 0, "ask"),
        ("continue", "ada", 0),
    ]
)
def test_no_answer_reaches_a_question_it_did_not_answer(steps):
    history = History()

    for step in steps:
        history.apply(step)

    # Every answer a node received was given to the very question it asked
    for asked, answer in history.asked:
        if isinstance(answer, dict) and "token" in answer:
            assert history.tokens[answer["token"]] == asked
    # Every answer applied is recorded with the question it answered
    events = history.thread_events()
    digests = {
        e.interrupt_id: e.digest for e in events if isinstance(e, WorkflowThread.InterruptRaised)
    }
    for event in events:
        if isinstance(event, WorkflowThread.NodeCompleted):
            for applied in event.applied or ():
                assert digests[applied["interrupt_id"]] == applied["digest"]
    # Every payment follows its own answer: since the thread's last payment (or its start,
    # or a fork that carried a decision over), `ask` ran with an answer applied, or a
    # decider stood in for `ask` with an edit as_node, giving a reason (a recorded decision)
    for thread_id in history.thread_ids + history.forks():
        answered = False
        for event in history.store.thread_events(thread_id):
            if isinstance(event, WorkflowThread.ThreadForked):
                answered = bool(event.state.get("decided"))
            elif isinstance(event, WorkflowThread.StateEdited) and event.as_node == "ask":
                assert event.actor["role"] in ("reviewer", "admin"), event.actor
                assert event.decision == "edit"
                assert event.reason
                answered = True
            elif isinstance(event, WorkflowThread.NodeCompleted) and event.node == "ask":
                answered = answered or bool(event.applied)
            elif isinstance(event, WorkflowThread.NodeCompleted) and event.node == "pay":
                assert answered, f"{thread_id}: pay ran with no answer applied since it last did"
                answered = False
    # Every refused attempt is on record
    assert history.recorded_refusals() == history.refused
