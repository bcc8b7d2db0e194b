"""A property of hold points on real LangGraph graphs, over random histories of starts,
edits, Commands, gotos, runs from past checkpoints and decisions by named principals of
every role, with durability "sync", "async" or "exit" (the native engine's own property:
tests/domain/test_hold_points_property.py):

- an answer a node ran with on record was given to the very question it asked (each
  answer is a token; the node logs the question it asked and the token it got);
- every answer applied is recorded with the digest of the question it answered;
- no payment is on record without an answer on record since the thread's last one.

LangGraph runs a node before the saver can refuse what led to it, so a refused run's
node runs in this process: the property is the record's. Runs from a past checkpoint
are an agent's: a decider's branch past their own decision re-runs the payment under it,
by design (README, "where it differs").
"""

from __future__ import annotations

from typing import Any, TypedDict

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.errors import EmptyInputError, GraphRecursionError, InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from domain.errors import HoldpointError
from domain.oversight.hold_points import question_digest
from domain.record.store import open_store
from langgraph.checkpoint.holdpoint import HoldpointSaver

PRINCIPALS = {"amy": "agent", "ann": "agent", "rita": "reviewer", "rob": "reviewer", "ada": "admin"}
AMOUNTS = (50, 250, 90_000)
DURABILITIES = ("sync", "async", "exit")
# What LangGraph itself raises for a history that makes no sense to it (a resume of a
# thread with nothing pending, a Command with nothing to do, two updates of one key).
LANGGRAPH_REFUSALS = (EmptyInputError, GraphRecursionError, InvalidUpdateError)


class Payment(TypedDict, total=False):
    amount: int
    answer: Any
    paid: Any


def payment_graph(saver: HoldpointSaver, asked: list[tuple[str, Any]]) -> Any:
    """START -> ask -> pay -> END; `ask` logs the digest of the question it asked and the
    answer it received."""

    def ask(state: Payment) -> dict[str, Any]:
        question = {"pay": state.get("amount")}
        answer = interrupt(question)
        asked.append((question_digest(question), answer))
        return {"answer": answer}

    def pay(state: Payment) -> dict[str, Any]:
        return {"paid": state.get("amount")}

    builder = StateGraph(Payment)
    builder.add_node("ask", ask)
    builder.add_node("pay", pay)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=saver)


principals = st.sampled_from(sorted(PRINCIPALS))
agents = st.sampled_from(sorted(who for who, role in PRINCIPALS.items() if role == "agent"))
threads = st.integers(0, 1)
amounts = st.sampled_from(AMOUNTS)
durabilities = st.sampled_from(DURABILITIES)
decisions = st.tuples(
    st.just("decide"), principals, threads, st.sampled_from(["respond", "approve"]), durabilities
)
edits = st.tuples(st.just("edit"), principals, threads, amounts)
operations = st.one_of(  # decisions and edits twice: a question asked anew needs both
    st.tuples(st.just("start"), principals, amounts, durabilities),
    st.tuples(st.just("start_with_goto"), principals, durabilities),  # past the hold point
    st.tuples(st.just("continue"), principals, threads, durabilities),
    edits,
    edits,
    decisions,
    decisions,
    st.tuples(st.just("command"), principals, threads, amounts, durabilities),
    st.tuples(st.just("goto_pay"), principals, threads, durabilities),
    st.tuples(st.just("fork"), agents, threads, st.integers(0, 9)),
)


class History:
    """Applies operations to a memory store through HoldpointSaver."""

    def __init__(self) -> None:
        self.saver = HoldpointSaver(open_store("memory://"))
        self.asked: list[tuple[str, Any]] = []
        self.graph = payment_graph(self.saver, self.asked)
        self.thread_ids: list[str] = []
        self.tokens = 0

    def config(self, who: str, thread_id: str, **more: Any) -> dict[str, Any]:
        actor = {"id": who, "role": PRINCIPALS[who]}
        return {"configurable": {"thread_id": thread_id, "actor": actor, **more}}

    def apply(self, operation: tuple[Any, ...]) -> None:
        kind, who, *rest = operation
        if kind in ("start", "start_with_goto"):
            thread_id = f"t{len(self.thread_ids)}"
            self.thread_ids.append(thread_id)
            if kind == "start":
                self.run({"amount": rest[0]}, self.config(who, thread_id), rest[1])
            else:
                command = Command(update={"amount": 50}, goto="pay")
                self.run(command, self.config(who, thread_id), rest[0])
            return
        if not self.thread_ids:
            return
        thread_id = self.thread_ids[rest[0] % len(self.thread_ids)]
        config = self.config(who, thread_id)
        if kind == "continue":
            self.run(None, config, rest[1])
        elif kind == "edit":
            self.attempt(lambda: self.graph.update_state(config, {"amount": rest[1]}))
        elif kind == "decide":
            self.tokens += 1
            value = {"token": self.tokens} if rest[1] == "respond" else True
            decided = self.config(who, thread_id, decision=rest[1])
            self.run(Command(resume=value), decided, rest[2])  # names no question
        elif kind == "command":
            self.run(Command(update={"amount": rest[1]}, goto="ask"), config, rest[2])
        elif kind == "goto_pay":  # past the hold point
            self.run(Command(goto="pay"), config, rest[1])
        elif kind == "fork":
            history = list(self.graph.get_state_history({"configurable": {"thread_id": thread_id}}))
            if history:
                past = history[rest[1] % len(history)].config["configurable"]["checkpoint_id"]
                self.run(None, self.config(who, thread_id, checkpoint_id=past), "sync")

    def run(self, given: Any, config: dict[str, Any], durability: str) -> None:
        self.attempt(lambda: self.graph.invoke(given, config, durability=durability))

    @staticmethod
    def attempt(call: Any) -> None:
        """Run `call`; an error Holdpoint or LangGraph raises on purpose is an outcome."""
        try:
            call()
        except (HoldpointError, *LANGGRAPH_REFUSALS):
            pass

    def events(self, thread_id: str) -> list[Any]:
        return list(self.saver.store.thread_events(thread_id))


def name(event: Any) -> str:
    return type(event).__name__


def ran(event: Any, node: str) -> bool:
    """A node's completion on record, not one run on a refusal."""
    return name(event) == "NodeCompleted" and event.node == node and not event.task.get("refused")


def paid(event: Any) -> bool:
    """A step's checkpoint where `paid` changed: a payment on record, unless pay's run is
    on record just before it (with durability "exit" LangGraph saves a run's last
    checkpoint, and of its nodes' writes only those pending there)."""
    return name(event) == "CheckpointSaved" and event.source == "loop" and "paid" in event.changed


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(operations, min_size=1, max_size=12))
# The histories found by this session's random sequences, besides the ones drawn:
@example(
    [
        ("start", "amy", 250, "sync"),
        ("edit", "rob", 0, 90_000),
        ("decide", "rita", 0, "respond", "sync"),
    ]
)
@example(
    [
        ("start", "amy", 250, "sync"),
        ("decide", "rita", 0, "approve", "sync"),
        ("goto_pay", "amy", 0, "exit"),
    ]
)
@example([("start_with_goto", "ada", "exit")])
@example([("start_with_goto", "ada", "async"), ("decide", "ada", 0, "approve", "exit")])
def test_no_payment_on_record_without_an_answer_to_the_question_asked(steps):
    history = History()

    for step in steps:
        history.apply(step)

    tokens: dict[int, str] = {}  # token -> digest of the question it was recorded answering
    for thread_id in history.thread_ids:
        events = history.events(thread_id)
        digests = {e.interrupt_id: e.digest for e in events if name(e) == "InterruptRaised"}
        answered = paying = False  # paying: pay's run on record, its checkpoint to come
        for event in events:
            if name(event) == "InterruptResumed":
                if isinstance(event.resume, dict) and "token" in event.resume:
                    tokens[event.resume["token"]] = event.digest
                answered = True
            elif ran(event, "ask"):
                for applied in event.applied or ():  # recorded with what it answered
                    assert digests[applied["interrupt_id"]] == applied["digest"]
            elif ran(event, "pay") or (paid(event) and not paying):
                assert answered, f"{thread_id}: paid with no answer on record since it last did"
                answered, paying = False, name(event) == "NodeCompleted"
            elif name(event) == "CheckpointSaved":
                paying = False
        assert history.saver.store.verify_chain(thread_id).ok
    # An answer a node ran with on record was given to the very question it asked
    recorded = {
        e.update["answer"]["token"]
        for t in history.thread_ids
        for e in history.events(t)
        if ran(e, "ask") and isinstance((e.update or {}).get("answer"), dict)
    }
    for asked, answer in history.asked:
        if isinstance(answer, dict) and answer.get("token") in recorded:
            assert tokens[answer["token"]] == asked
