"""Errors the domain raises.

Every misuse a caller can make raises one of these, before anything is
recorded: a silently dropped decision is an audit failure, so where LangGraph
is lenient Holdpoint is strict. `api/errors.py` maps them to HTTP statuses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class HoldpointError(Exception):
    """Base class of every error Holdpoint raises on purpose."""


class GraphInterrupt(Exception):  # noqa: N818 - LangGraph's name, kept for porting
    """Control flow: raised by `interrupt()` to pause the running node.

    It derives from `Exception`, as LangGraph's does; a node that catches every
    exception swallows it, so catch narrower exceptions around `interrupt()`.
    """

    def __init__(
        self,
        index: int,
        value: Any,
        policy: dict[str, Any] | None = None,
        reasked: str | None = None,
    ) -> None:
        super().__init__(value)
        self.index = index
        self.value = value
        self.policy = policy or {}
        self.reasked = reasked  # the interrupt whose answer was for another question


class NodeTimeoutError(HoldpointError, TimeoutError):
    """A node ran longer than the graph's `step_timeout`; the run records NodeFailed."""

    def __init__(self, node: str, timeout: float) -> None:
        super().__init__(
            f"Node {node!r} ran longer than step_timeout={timeout:g} s and was abandoned; "
            "run the thread again to retry the node, or cancel it"
        )
        self.node = node


class GraphDefinitionError(HoldpointError, ValueError):
    """The graph is malformed: unknown node in an edge, no entry point, ..."""


class NoCheckpointerError(HoldpointError, ValueError):
    """The operation needs a checkpointer (a store), and the graph has none."""


class MissingThreadIdError(HoldpointError, ValueError):
    """The config names no `thread_id`."""

    def __init__(self) -> None:
        super().__init__(
            "Checkpointer requires config['configurable']['thread_id']; "
            'pass config={"configurable": {"thread_id": "..."}}'
        )


class EmptyInputError(HoldpointError, ValueError):
    """`invoke(None)` on a thread that has nothing to continue."""


class ThreadNotFoundError(HoldpointError, LookupError):
    """No thread with this id has been recorded."""

    def __init__(self, thread_id: str, hint: str = "") -> None:
        message = f"Thread {thread_id!r} does not exist"
        super().__init__(f"{message}; {hint}" if hint else message)
        self.thread_id = thread_id


class CheckpointNotFoundError(HoldpointError, LookupError):
    """The checkpoint id names no checkpoint of this thread."""

    def __init__(self, thread_id: str, checkpoint_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} has no checkpoint {checkpoint_id!r}")
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class ThreadUnreadableError(HoldpointError):
    """One of the thread's stored events cannot be decoded (the store was damaged there):
    the thread cannot be folded, so it can be neither read nor run."""

    def __init__(self, thread_id: str, version: int | None, event: str | None, why: str) -> None:
        where = "one of its events" if version is None else f"its event at version {version}"
        kind = f" ({event})" if event else ""
        super().__init__(
            f"Thread {thread_id!r} cannot be read: {where}{kind} cannot be decoded: {why}. "
            "The store is damaged there: run `holdpoint verify` to see what is wrong"
        )
        self.thread_id = thread_id
        self.version = version
        self.why = why


class NotInterruptedError(HoldpointError):
    """A resume was sent to a thread that is not paused at an interrupt."""

    def __init__(self, thread_id: str, status: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} is not paused at an interrupt (status: {status}); "
            "there is nothing to resume"
        )
        self.thread_id = thread_id
        self.status = status


class UnknownInterruptError(HoldpointError):
    """A resume named interrupt ids that are not pending on the thread."""

    def __init__(self, thread_id: str, unknown: list[str], pending: list[str]) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no pending interrupt {', '.join(unknown)}; "
            f"pending: {', '.join(pending) or 'none'}"
        )
        self.thread_id = thread_id
        self.unknown = unknown
        self.pending = pending


class AmbiguousResumeError(HoldpointError):
    """One resume value was sent while several interrupts are pending."""

    def __init__(self, thread_id: str, pending: list[str]) -> None:
        super().__init__(
            f"Thread {thread_id!r} has {len(pending)} pending interrupts "
            f"({', '.join(pending)}); resume with Command(resume={{interrupt_id: value}})"
        )
        self.thread_id = thread_id
        self.pending = pending


class ThreadInterruptedError(HoldpointError):
    """New input was sent to a thread that is paused at an interrupt."""

    def __init__(self, thread_id: str, pending: list[str]) -> None:
        super().__init__(
            f"Thread {thread_id!r} is paused at interrupt {', '.join(pending)}; "
            "resume it with Command(resume=...) or cancel it before sending new input"
        )
        self.thread_id = thread_id
        self.pending = pending


class ThreadBusyError(HoldpointError):
    """New input was sent to a thread whose current run has not finished."""

    def __init__(self, thread_id: str, status: str, next_nodes: list[str]) -> None:
        super().__init__(
            f"Thread {thread_id!r} has unfinished work (status: {status}, next: "
            f"{', '.join(next_nodes)}); continue it with invoke(None) or cancel it"
        )
        self.thread_id = thread_id
        self.status = status


class RunNotInProgressError(HoldpointError):
    """A takeover of a run that is not the thread's run in progress."""

    def __init__(self, thread_id: str, run_id: str, current: str | None) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no unfinished work of run {run_id} to take over "
            f"(its run: {current or 'none'})"
        )
        self.thread_id = thread_id


class StaleCheckpointError(HoldpointError):
    """A checkpoint recorded as what changed since the namespace's latest one, which has
    moved on meanwhile (another writer): it must be recorded with every value."""

    def __init__(self, thread_id: str, namespace: str, checkpoint_id: str) -> None:
        super().__init__(
            f"Checkpoint {checkpoint_id} of thread {thread_id!r} (namespace {namespace!r}) "
            "does not follow the latest one recorded"
        )


class RefusedRunError(HoldpointError):
    """A run went on from a Command or a branch that was refused (a resume when another
    answer was on record first, say): LangGraph ran the step it led to before the saver
    could refuse it, and the saver records nothing of the run after that step."""

    def __init__(self, thread_id: str, refusal: HoldpointError) -> None:
        super().__init__(
            f"Thread {thread_id!r}: this run was refused ({refusal}), so nothing of it "
            "after the step it began with is recorded; read the thread again for what is "
            "on record"
        )
        self.thread_id = thread_id
        self.refusal = refusal


class ThreadCancelledError(HoldpointError):
    """The thread was cancelled; it can be read but not run."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} was cancelled; it can be read, not run")
        self.thread_id = thread_id


class ConcurrentUpdateError(HoldpointError):
    """Another writer appended to the thread first; nothing of ours was written."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} was changed by another writer at the same time; "
            "nothing was recorded, reload it and try again"
        )
        self.thread_id = thread_id


class UnsupportedFeatureError(HoldpointError, NotImplementedError):
    """A LangGraph argument or feature the native engine does not implement: refused by
    name rather than ignored (domain/graph/unsupported.py)."""


class GraphRecursionError(HoldpointError, RecursionError):
    """The run took more supersteps than `recursion_limit` allows."""


class InvalidUpdateError(HoldpointError):
    """A node returned an update the state cannot take."""


class NotSerializableError(InvalidUpdateError, TypeError):
    """A value that must be recorded is not JSON-serialisable."""


class ReducerUnavailableError(HoldpointError):
    """A recorded reducer cannot be resolved, so the state cannot be folded."""


class ThreadExistsError(HoldpointError):
    """A thread with this id already exists."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id!r} already exists")
        self.thread_id = thread_id


class OtherEngineError(HoldpointError):
    """A thread asked to go on by the engine that did not record it: the native engine
    (domain.graph) and real LangGraph graphs (HoldpointSaver) each continue their own
    threads only, and refuse before they write anything."""

    def __init__(self, thread_id: str, engine: str) -> None:
        if engine == "langgraph":  # domain.record.langgraph_record.LANGGRAPH
            whose, other = "a real LangGraph graph's (HoldpointSaver)", "the native engine"
        else:
            whose, other = "a native Holdpoint graph's (domain.graph)", "a LangGraph graph"
        super().__init__(f"Thread {thread_id!r} is {whose}: {other} cannot continue it")
        self.thread_id = thread_id


class AuthenticationError(HoldpointError):
    """The API key of a request is missing, unknown or revoked.

    `reason` is the refusal's code: "no_key", "unknown_key", "revoked_key" or
    "expired_key".
    """

    reason = "unknown_key"


class SignInRefusedError(AuthenticationError):
    """A sign-in through an OpenID Connect provider failed (state, token, claims), or a
    session made by one is no longer valid for the provider configured now."""

    reason = "sign_in_refused"


class RoleNotAllowedError(SignInRefusedError):
    """A provider's claims give no role allowed to sign in to the UI."""

    reason = "wrong_role"


class MissingKeyError(AuthenticationError):
    """A request carried no API key."""

    reason = "no_key"

    def __init__(self) -> None:
        super().__init__(
            "No API key: send one as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
        )


class UnknownKeyError(AuthenticationError, LookupError):
    """The API key is malformed, or names no key, or its secret does not match."""

    reason = "unknown_key"

    def __init__(self, key_id: str | None, message: str | None = None) -> None:
        super().__init__(message or f"No API key {key_id!r} exists")
        self.key_id = key_id


class KeyExpiredError(AuthenticationError):
    """The API key's validity ended: it no longer authenticates anyone."""

    reason = "expired_key"

    def __init__(self, key_id: str, expires_at: str) -> None:
        super().__init__(
            f"The API key {key_id} expired at {expires_at}; ask an admin for a new key"
        )
        self.key_id = key_id


class InvalidKeyExpiryError(HoldpointError, ValueError):
    """A key's expiry that is not a time in the future."""


class KeyRevokedError(AuthenticationError):
    """The API key was revoked: it no longer authenticates anyone."""

    reason = "revoked_key"

    def __init__(self, key_id: str, revoked_at: str) -> None:
        super().__init__(
            f"The API key {key_id} was revoked at {revoked_at}; ask an admin for a new key"
        )
        self.key_id = key_id


class KeyAlreadyRevokedError(HoldpointError):
    """A key that is already revoked was revoked again; nothing is recorded."""

    def __init__(self, key_id: str, revoked_at: str, revoked_by: str) -> None:
        super().__init__(
            f"The API key {key_id} was already revoked at {revoked_at} by {revoked_by}; "
            "nothing was recorded"
        )
        self.key_id = key_id


class InvalidRoleError(HoldpointError, ValueError):
    """A key was asked for with a role that does not exist."""

    def __init__(self, role: str, roles: tuple[str, ...]) -> None:
        super().__init__(f"Unknown role {role!r}: use one of {', '.join(roles)}")
        self.role = role


class InvalidRolesError(HoldpointError, ValueError):
    """The custom roles configured (`[roles]` of a holdpoint.toml) are not valid."""


class InvalidKeyScopeError(HoldpointError, ValueError):
    """A key's authority scope or competence attestation is not valid; nothing is recorded."""


class InvalidPrincipalError(HoldpointError, ValueError):
    """A principal id is empty, too long or not printable."""


# -- hold points (domain/oversight/hold_points.py) --------------------------------------


class OversightError(HoldpointError, PermissionError):
    """A hold point's rules refuse the caller this: the refusal is recorded, nothing else.

    `reason` is the refusal's code on record (`domain.access.identity.REFUSAL_REASONS`).
    """

    reason = "forbidden"


class WrongRoleError(OversightError):
    """The caller's role may not answer this interrupt (or may not decide at all)."""

    reason = "wrong_role"


class OutOfScopeError(OversightError):
    """The caller's key may not decide this: another graph, or an amount above its limit."""

    reason = "out_of_scope"


class SeparationOfDutiesError(OversightError):
    """The caller shaped what is to be decided (started, fed, edited or forked the
    thread), so may not decide it."""

    reason = "separation_of_duties"


class HoldPointBypassError(OversightError):
    """A change of state, or of the flow, at a hold point by someone who may not decide it."""

    reason = "hold_point"


class RepeatedApprovalError(OversightError):
    """The same principal approved an interrupt that needs approvals by different ones."""

    reason = "four_eyes"


class ApprovalsOutstandingError(OversightError):
    """A node ran on an answer to an interrupt that still needs approvals by others
    (four eyes): LangGraph, driven from Python, runs the node on any resume it is handed."""

    reason = "four_eyes"

    def __init__(
        self, interrupt_id: str, node: str, actor_id: str, given: int, needed: int
    ) -> None:
        super().__init__(
            f"Interrupt {interrupt_id} needs {needed} approvals by different principals and "
            f"has {given}: LangGraph ran node {node!r} on the resume of principal "
            f"{actor_id!r} before Holdpoint could hold it. From Python, record the approvals "
            "before the last with HoldpointSaver.approve(config) and resume with the last; "
            "Holdpoint's API holds a decision until the approvals are in"
        )
        self.interrupt_id = interrupt_id


class QuestionChangedError(OversightError):
    """The decider was shown a payload other than the interrupt's recorded one."""

    reason = "question_changed"

    def __init__(self, interrupt_id: str, shown: str, recorded: str) -> None:
        super().__init__(
            f"Interrupt {interrupt_id} asks the question with digest {recorded}, but the "
            f"decision was made on {shown}: read the interrupt again and decide on what it "
            "asks; nothing was recorded"
        )
        self.interrupt_id = interrupt_id
        self.shown = shown
        self.recorded = recorded


class QuestionAskedAgainError(OversightError):
    """A resume that names no question, given after the thread's state was edited since
    the one pending was asked: LangGraph runs the asking node again, from the edited
    state, and hands the answer to what it asks anew, which the decider was not shown."""

    reason = "question_changed"

    def __init__(self, interrupt_id: str) -> None:
        super().__init__(
            f"Interrupt {interrupt_id} was asked before the thread's state was edited since: "
            "its node asks anew when the thread goes on, and this answer would go to that "
            "question, which was not shown. Run the thread on (invoke(None)) and decide what "
            "it asks"
        )
        self.interrupt_id = interrupt_id


class ReasonRequiredError(InvalidUpdateError):
    """The answer (or the edit standing in for a node) needs a reason and has none."""


class DecisionContradictionError(InvalidUpdateError):
    """An approve or reject whose resume value says otherwise."""

    def __init__(self, decision: str, resume: Any, expected: Any) -> None:
        super().__init__(
            f"decision {decision!r} resumes with {_json_text(expected)}, not "
            f"{_json_text(resume)}: send the decision the value means (edit to change the "
            "answer), or leave resume out"
        )
        self.decision = decision
        self.resume = resume
        self.expected = expected


class ResumeRequiredError(InvalidUpdateError):
    """A decision that needs the value to resume with (edit, respond) came without one."""

    def __init__(self, decision: str) -> None:
        super().__init__(f"a decision of {decision!r} needs the value to resume with")
        self.decision = decision


class InvalidThreadIdError(InvalidUpdateError):
    """A thread id that no URL can name, or that is not text."""


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class InvalidMemoryItemError(InvalidUpdateError):
    """A memory store item's namespace, key or value that the store does not take."""


class MemoryItemNotFoundError(HoldpointError, LookupError):
    """No item under that key in that namespace (or it was deleted)."""

    def __init__(self, namespace: Sequence[str], key: str) -> None:
        super().__init__(f"No item {key!r} in namespace {list(namespace)!r}")
        self.namespace = list(namespace)
        self.key = key


class InvalidScheduleError(InvalidUpdateError):
    """A cron schedule, time zone or end time the scheduler cannot keep."""


class CronNotFoundError(HoldpointError, LookupError):
    """No cron with that id (or it was deleted)."""

    def __init__(self, cron_id: str) -> None:
        super().__init__(f"Cron {cron_id!r} not found")
        self.cron_id = cron_id


class CronChangedError(HoldpointError):
    """The cron was changed (or fired) by another writer at the same time; nothing of ours
    was recorded."""

    def __init__(self, cron_id: str) -> None:
        super().__init__(f"Cron {cron_id!r} changed meanwhile; nothing was recorded, try again")
        self.cron_id = cron_id


class InvalidAssistantError(InvalidUpdateError):
    """An assistant's fields that the record does not take."""


class AssistantNotFoundError(HoldpointError, LookupError):
    """No assistant with that id (or it was deleted)."""

    def __init__(self, assistant_id: str) -> None:
        super().__init__(f"Assistant {assistant_id!r} not found")
        self.assistant_id = assistant_id


class AssistantExistsError(HoldpointError):
    """An assistant with that id is already on record (create with if_exists "raise")."""

    def __init__(self, assistant_id: str) -> None:
        super().__init__(
            f"Assistant {assistant_id!r} already exists: update it, or create with "
            '"if_exists": "do_nothing"'
        )
        self.assistant_id = assistant_id


class AssistantVersionNotFoundError(HoldpointError, LookupError):
    def __init__(self, assistant_id: str, version: int, versions: Sequence[int]) -> None:
        super().__init__(
            f"Version {version} not found for assistant {assistant_id!r}: it has versions "
            f"{', '.join(map(str, versions))}"
        )
        self.assistant_id = assistant_id
        self.version = version


class AssistantChangedError(HoldpointError):
    """The assistant was changed by another writer at the same time; nothing of ours was
    recorded."""

    def __init__(self, assistant_id: str) -> None:
        super().__init__(
            f"Assistant {assistant_id!r} changed meanwhile; nothing was recorded, try again"
        )
        self.assistant_id = assistant_id


class GraphSuspendedError(HoldpointError):
    """The graph is suspended: it takes no new run and no resume until the suspension is
    lifted."""

    def __init__(self, graph_id: str, by: str | None, reason: str) -> None:
        super().__init__(
            f"Graph {graph_id!r} is suspended (by {by}: {reason}): it takes no new run and "
            "no resume until an admin lifts the suspension"
        )
        self.graph_id = graph_id


class SuspensionStateError(HoldpointError):
    """A suspension of a graph that already is suspended, or a lift of one that is not."""


class RetentionPolicyError(HoldpointError, ValueError):
    """A retention policy that cannot be recorded: a bad scope, clock, period or rule, or
    a period under the configured floor."""


class RetentionStateError(HoldpointError):
    """A retention policy retired that is not in force, or a purge that is not possible
    (a store that keeps nothing to purge, no seal key)."""


class LegalHoldError(HoldpointError, ValueError):
    """A legal hold with a bad scope."""


class LegalHoldNotFoundError(LegalHoldError):
    """A lift of a legal hold that is not in place."""


class IncidentError(HoldpointError, ValueError):
    """An incident that cannot be opened or closed as asked."""


class ReadNotRecordedError(HoldpointError):
    """A read could not be recorded (other writers kept appending to the reader's log
    first), so it is not served: a read that leaves no record is not made."""

    def __init__(self, actor_id: str, attempts: int) -> None:
        super().__init__(
            f"The read by {actor_id!r} could not be recorded after {attempts} attempts "
            "(other requests of the same reader were being recorded); nothing was shown, "
            "try again"
        )
        self.actor_id = actor_id


class PersonalDataError(HoldpointError, ValueError):
    """Personal data that cannot be recorded protected: its data subject is not known."""


class ErasureRefusedError(HoldpointError):
    """An erasure that may not happen (a legal hold covers the subject's threads)."""
