"""What a retention policy or a legal hold covers: all threads, a graph, a metadata
key (with or without a value), or, for a hold, one thread.

Written as text where people write them: `all`, `graph:refund`, `metadata:customer`,
`metadata:customer=globex`, `thread:t-42`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.errors import HoldpointError

KINDS = ("all", "graph", "metadata", "thread")


class ScopeError(HoldpointError, ValueError):
    """A scope that is not one of the forms above."""


@dataclass(frozen=True)
class ThreadFacts:
    """What retention and holds read of a thread (from the thread index)."""

    thread_id: str
    graph_id: str
    status: str
    created_at: str  # ISO 8601, UTC
    updated_at: str
    metadata: dict[str, Any]
    pending: int


@dataclass(frozen=True)
class Scope:
    kind: str
    name: str = ""  # the graph, the metadata key or the thread
    value: str | None = None  # the metadata value to match, if any

    @classmethod
    def parse(cls, text: str, *, kinds: tuple[str, ...] = KINDS) -> Scope:
        kind, _, rest = text.strip().partition(":")
        if kind not in kinds:
            allowed = ", ".join(f"{k}:..." if k != "all" else k for k in kinds)
            raise ScopeError(f"Unknown scope {text!r}: one of {allowed}")
        if kind == "all":
            if rest:
                raise ScopeError(f"The scope `all` takes no name (got {text!r})")
            return cls("all")
        name, equals, value = rest.partition("=") if kind == "metadata" else (rest, "", "")
        if not name.strip():
            raise ScopeError(f"The scope {text!r} names no {kind}")
        return cls(kind, name.strip(), value if equals else None)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scope:
        return cls(str(data["kind"]), str(data.get("name", "")), data.get("value"))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "value": self.value}

    def covers(self, thread: ThreadFacts) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "graph":
            return thread.graph_id == self.name
        if self.kind == "thread":
            return thread.thread_id == self.name
        if self.name not in thread.metadata:
            return False
        return self.value is None or _text(thread.metadata[self.name]) == self.value

    def __str__(self) -> str:
        if self.kind == "all":
            return "all"
        if self.kind == "metadata" and self.value is not None:
            return f"metadata:{self.name}={self.value}"
        return f"{self.kind}:{self.name}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
