"""A thread's timeline as the viewer may read it.

Auditors read it as `GET /threads/{id}/audit` gives it: actors, summaries that
name them, and the hash chain's check. Others read what `GET
/threads/{id}/versions/{n}` gives them: each event and its hashes, without
who acted (`api.presenters.time_travel.AUDIT_ONLY`).
"""

from __future__ import annotations

from typing import Any

from api.presenters.audit_timeline import timeline
from domain.oversight.hold_points import record_digest
from domain.record.application import Workflows

NEUTRAL = {
    "ThreadStarted": "the thread started",
    "ThreadForked": "the thread was forked",
    "InputReceived": "input arrived",
    "InterruptResumed": "a human decided",
    "InterruptApproved": "a human approved, more approvals needed",
    "InterruptAssigned": "a reviewer was assigned",
    "StateEdited": "the state was edited",
    "ThreadCancelled": "the thread was cancelled",
    "RunCancelled": "a run was cancelled",
    "MetadataUpdated": "the metadata was updated",
}


def thread_timeline(store: Workflows, thread_id: str, *, with_actors: bool) -> dict[str, Any]:
    """`timeline()`, with actors and the chain check left out unless `with_actors`."""
    found = timeline(store, thread_id)
    if with_actors:
        return found
    for entry in found["entries"]:
        entry["actor"] = None
        if entry["event"] in NEUTRAL:
            entry["summary"] = NEUTRAL[entry["event"]]
    found["chain"] = None
    return found


def completed(found: dict[str, Any]) -> bool:
    entries = found["entries"]
    return bool(entries) and entries[-1]["event"] == "ThreadCompleted"


ASKED = "InterruptRaised"
ANSWERED = ("InterruptResumed", "InterruptApproved")


def with_payloads(found: dict[str, Any]) -> dict[str, Any]:
    """Each interrupt's payload as its decider was shown it, with its digest
    (`record_digest`: the recorded one, or computed for interrupts recorded before
    digests were); and on each answer, the digest it was given on, and whether that is
    the digest of the payload its interrupt asked."""
    asked: dict[str, str] = {}
    for entry in found["entries"]:
        details = entry["details"]
        if entry["event"] == ASKED:
            digest = record_digest({"value": details["value"], "digest": details["digest"]})
            asked[details["interrupt_id"]] = digest
            entry["asked"] = {"payload": details["value"], "digest": digest}
        elif entry["event"] in ANSWERED:
            digest = details.get("digest")
            entry["answered"] = {
                "digest": digest,
                "matches": digest is not None and digest == asked.get(details["interrupt_id"]),
            }
    return found
