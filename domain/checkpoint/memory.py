"""`InMemorySaver`: a store kept in this process, as in LangGraph."""

from __future__ import annotations

from domain.record.application import Workflows
from domain.record.store import store_env


class InMemorySaver(Workflows):
    """Threads kept in memory: for tests and notebooks; gone when the process ends."""

    def __init__(self) -> None:
        super().__init__(env=store_env("memory://"), url="memory://")


MemorySaver = InMemorySaver
