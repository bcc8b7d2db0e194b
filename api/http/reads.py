"""What each read endpoint records (domain/oversight/read_log.py): the reads, built from
what the endpoint showed, for `Services.reads` to record once per window.

A read is recorded after its answer is made and before it is sent: a read that fails
records nothing, and one that cannot be recorded is not sent (ReadNotRecordedError).
A refused caller never gets this far: the refusal is its only record.
"""

from __future__ import annotations

from collections.abc import Iterable

from domain.access.identity import Principal
from domain.oversight.read_log import Read
from domain.record.thread import WorkflowThread
from projections.pending_approvals import PendingApproval
from service.services import Services


def queue_reads(target: str, shown: Iterable[PendingApproval], via: str) -> list[Read]:
    """The queue, and the payload of each open interrupt it showed."""
    return [
        Read("queue", target, via),
        *(
            Read(
                "payload",
                item.interrupt_id,
                via,
                thread_id=item.thread_id,
                interrupt_id=item.interrupt_id,
                graph_id=item.graph_id,
            )
            for item in shown
        ),
    ]


def record_reads(services: Services, principal: Principal, *reads: Read) -> None:
    """Record `reads` by `principal`, once per window."""
    services.reads.record(principal.as_actor(), reads)


def timeline_read(thread: WorkflowThread, via: str) -> Read:
    """A thread's audit timeline (or its events), which shows its payloads."""
    return Read(
        "timeline", thread.thread_id, via, thread_id=thread.thread_id, graph_id=thread.graph_id
    )
