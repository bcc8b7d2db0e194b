"""An assistant's id, as LangGraph's server makes it for a graph served as one: a UUID
made from the graph's name (uuid5), the same in every process and after every restart."""

from __future__ import annotations

from functools import lru_cache
from uuid import UUID, uuid5

ASSISTANT_NAMESPACE = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


@lru_cache(maxsize=256)  # asked for every served graph at every run's start
def assistant_id(graph_id: str) -> str:
    return str(uuid5(ASSISTANT_NAMESPACE, graph_id))
