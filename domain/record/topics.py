"""Recorded topics are a permanent contract: a class that moves keeps the topic it was
recorded under.

A stored event names its class by topic (`module:QualName`), and so does a `Created`
event's `originator_topic` and a snapshot's `topic`. `keep_topics` pins an aggregate
and its event classes to the module they were first recorded from: the library
writes that topic for new events (its `TOPIC` attribute) and resolves it for old ones
(`register_topic`), so a store written before a move reads, verifies and projects the
same after it (tests/persistence/test_store_fixture.py).
"""

from __future__ import annotations

from eventsourcing.domain import CanMutateAggregate
from eventsourcing.utils import register_topic


def keep_topics(aggregate: type, module: str) -> None:
    """Pin `aggregate` and each event class nested in it to `module`'s topics."""
    nested = [
        value
        for value in vars(aggregate).values()
        if isinstance(value, type) and issubclass(value, CanMutateAggregate)
    ]
    for cls in (aggregate, *nested):
        topic = f"{module}:{cls.__qualname__}"
        cls.TOPIC = topic  # type: ignore[attr-defined]
        register_topic(topic, cls)
