"""The stop button (EU AI Act Article 14(4)(e)): a thread cancelled for good.

`cancel_thread` is the one way a person stops a thread, for the HTTP API, Agent Inbox's
"mark as resolved" and the browser UI alike. The thread records ThreadCancelled at once
(its pending interrupts withdrawn; it can be read, never run again), and the run that
holds it, if one does, in any process, is asked to stop at its step's end. The record
stops that run there too: the step that was running when the stop came is recorded
after it (its node ran), and nothing runs after (domain/engine/runtime.py for a native
graph, HoldpointSaver for a real LangGraph graph).
"""

from __future__ import annotations

from typing import Any

from service.services import Services


def cancel_thread(
    services: Services, thread_id: str, actor: dict[str, Any], reason: str | None
) -> int | None:
    """Cancel the thread and stop its run; the position. ThreadNotFoundError, or
    ThreadCancelledError when it was cancelled already, recording nothing."""
    position = services.store.cancel(thread_id, actor, reason)
    services.runs.stop_holder(thread_id, actor, reason)
    return position
