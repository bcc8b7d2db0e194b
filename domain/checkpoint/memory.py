"""`InMemorySaver`: a store kept in this process, as in LangGraph."""

from __future__ import annotations

from domain.application import Workflows
from domain.store import store_env


class InMemorySaver(Workflows):
    """Threads kept in memory: for tests and notebooks; gone when the process ends."""

    def __init__(self) -> None:
        super().__init__(env=store_env("memory://"), url="memory://")


MemorySaver = InMemorySaver
