"""`holdpoint incident open`: freeze the evidence of an incident and hand it over.

Seals the log, writes each thread's evidence bundle (signed with the seal key) to
a folder, places a legal hold on each thread, and records `IncidentOpened` with the
seal's position and each bundle's SHA-256, in that order: a crash part-way leaves at
worst holds without an incident, never an incident without its holds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import IncidentError, ThreadNotFoundError
from domain.oversight.suspensions import reason_given
from domain.record.application import Workflows
from domain.retention.retention import Retention
from integrity.export import export_thread, write_bundle
from service.retention import seal_log

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def open_incident(
    store: Workflows,
    key: Ed25519PrivateKey,
    thread_ids: list[str],
    reason: str | None,
    actor: dict[str, Any],
    out: Path,
) -> dict[str, Any]:
    """Open an incident on `thread_ids`, its bundles written to the folder `out`."""
    why = reason_given(reason, "Opening an incident")
    if not thread_ids:
        raise IncidentError("Name the incident's threads (--thread, repeatable)")
    for thread_id in thread_ids:
        if store.thread(thread_id) is None:
            raise ThreadNotFoundError(thread_id)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise IncidentError(f"{out} exists and is not an empty folder: choose another --out")
    retention = Retention(store)
    incident_id = retention.next_incident_id()
    sealed_at = seal_log(store, key, actor)
    out.mkdir(parents=True, exist_ok=True)
    bundles = []
    for number, thread_id in enumerate(thread_ids, start=1):
        bundle, problems = export_thread(store, thread_id, key=key)
        if bundle is None:
            listed = "; ".join(p.detail for p in problems[:3])
            msg = f"The evidence of thread {thread_id!r} cannot be exported: {listed}"
            raise IncidentError(msg)
        path = out / f"{incident_id}-{number}.bundle.json"
        write_bundle(bundle, path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        bundles.append({"thread_id": thread_id, "file": path.name, "sha256": digest})
    holds = [
        retention.place_hold(f"thread:{thread_id}", actor, f"{incident_id}: {why}")
        for thread_id in thread_ids
    ]
    retention.record_incident(incident_id, thread_ids, why, actor, holds, sealed_at, bundles)
    return next(i for i in retention.incidents() if i["incident_id"] == incident_id)
