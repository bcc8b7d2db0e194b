"""Reads made on the command line (`holdpoint report`, `holdpoint export`), recorded as
the HTTP API's are (domain/oversight/read_logs.py), by the local operator: the operating
system user, unauthenticated. The window is the server's (`HOLDPOINT_READ_WINDOW_SECONDS`,
300 s by default)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from domain.access.actor import local_actor
from domain.oversight.read_log import Read, read_target
from domain.oversight.read_logs import DEFAULT_WINDOW_SECONDS, ReadLogs
from domain.record.application import Workflows

WINDOW_VARIABLE = "HOLDPOINT_READ_WINDOW_SECONDS"


def record_cli_read(
    store: Workflows,
    kind: str,
    name: str,
    query: Mapping[str, object],
    thread_id: str | None = None,
) -> None:
    """Record that the local operator read `name` with `query` (a report, an export)."""
    window = int(os.environ.get(WINDOW_VARIABLE) or DEFAULT_WINDOW_SECONDS)
    read = Read(kind, read_target(name, query), "cli", thread_id=thread_id)
    ReadLogs(store, window).record(local_actor(), [read])
