"""Errors of the server's machinery: what a use case or the run machinery refuses.

Like the domain's errors they are HoldpointErrors, mapped to HTTP statuses in one table
(`api.http.problems`); a CLI prints them on one line. A `RefusalError` is an attempt
the edge records as refused (AccessRefused, with its `reason`) before it answers.
"""

from __future__ import annotations

from typing import Any

from domain.errors import HoldpointError


class ServiceError(HoldpointError):
    """Refused by the server's machinery, not by a domain rule."""


class RefusalError(ServiceError):
    """An answer refused before any rule of the hold point could see it; on record.

    `reason` is the refusal's code (`domain.access.identity.REFUSAL_REASONS`); `members`
    say more, for the problem (who decided first, and when)."""

    reason = "conflict"

    def __init__(self, message: str, reason: str | None = None, **members: Any) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.members = members


class InterruptNeverRaisedError(RefusalError, LookupError):
    """No thread ever raised an interrupt with this id."""

    reason = "unknown_interrupt"

    def __init__(self, interrupt_id: str) -> None:
        super().__init__(f"No interrupt {interrupt_id} was ever raised")
        self.interrupt_id = interrupt_id


class InterruptNotOpenError(RefusalError):
    """The interrupt was answered, expired, withdrawn or asked again: nothing recorded."""


# The lease of a thread held by a human's edit, not a run, is named so (`RunManager.holding`).
EDIT_HOLDER = "edit:"


class RunInProgressError(ServiceError):
    """Another run of the thread (or an edit) held it for longer than the server waits."""

    def __init__(self, thread_id: str, run_id: str | None, waited: float) -> None:
        if run_id is not None and run_id.startswith(EDIT_HOLDER):
            busy, then = "an edit of its state", "try again"
        else:
            busy, then = f"run {run_id or '(finishing)'}", "join that run, then try again"
        super().__init__(
            f"Thread {thread_id!r} is busy with {busy} and stayed busy for {waited:g} s; {then}"
        )
        self.thread_id = thread_id


class RunExistsError(ServiceError):
    """A run with this id is recorded already: another process started it (a cron's
    firing, taken up by another scheduler while its own was starting it)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Run {run_id} is recorded already: another process started it")
        self.run_id = run_id


class RunNotFoundError(ServiceError, LookupError):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"Run {run_id} not found")
        self.run_id = run_id


class RunNotActiveError(ServiceError):
    """The run has ended: there is nothing left to cancel."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"Run {run_id} has ended ({status}): there is nothing to cancel")
        self.run_id = run_id


class ServerStoppingError(ServiceError):
    """The server is shutting down and starts no more runs."""

    def __init__(self) -> None:
        super().__init__("The server is stopping")


class PositionBeyondLogError(ServiceError, ValueError):
    """A wait for a log position that was never recorded: it could never end."""

    def __init__(self, position: int, head: int) -> None:
        super().__init__(f"position {position} is beyond the last recorded event ({head})")


class ReadModelBehindError(ServiceError):
    """The read models did not reach a position in the time the server waits."""


class UnknownGraphError(ServiceError, LookupError):
    """No served graph has this graph id or assistant id."""


class EngineConfigError(ServiceError):
    """A run's config sets keys the graph engine keeps for itself
    (`service.langgraph_app.check_engine_keys`)."""


class GraphNotServedError(ServiceError):
    """The thread's graph is recorded but not served by this process: readable, not runnable."""


class IdempotencyKeyReusedError(ServiceError):
    """An Idempotency-Key sent again with a different answer."""


class TooManyReservationsError(ServiceError):
    """A principal holds as many reserved threads that never ran as the server allows."""

    def __init__(self, principal_id: str, limit: int) -> None:
        super().__init__(
            f"{principal_id!r} already holds {limit} reserved threads that never ran; run "
            "some of them, or create threads with metadata.graph_id (recorded at once, "
            "never reserved)"
        )
        self.principal_id = principal_id


class SessionNotFoundError(ServiceError, LookupError):
    """No browser session, or more than one, has a handle that starts so."""
