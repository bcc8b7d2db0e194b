"""The aggregate id a thread's events are stored under, derived from its thread id.

Its own module so that code which only addresses a thread (the integrity checks, the
store) need not import the aggregate.
"""

from __future__ import annotations

from functools import lru_cache
from uuid import NAMESPACE_URL, UUID, uuid5

THREAD_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/threads")


@lru_cache(maxsize=4096)
def thread_uuid(thread_id: str) -> UUID:
    """The aggregate id of a thread: derived, so any process can address it."""
    return uuid5(THREAD_NAMESPACE, thread_id)
