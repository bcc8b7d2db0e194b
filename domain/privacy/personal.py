"""What a graph declares personal: where its data subject's id is, and which values are theirs.

`builder.compile(checkpointer=store, personal=Personal(subject="metadata:customer_id",
state=("email", "name"), payload=("email",), metadata=("customer",)))` makes every
event recorded on a thread of the graph carry those values encrypted with the
subject's key (domain/privacy/protector.py), so that destroying the key erases them
(`holdpoint erase --subject ID`) while the hashes, taken over the ciphertext, still
verify. The key that names the subject is personal too: it is encrypted like the rest.

- `subject`: `metadata:KEY` (the thread's metadata, given when it starts) or
  `state:KEY` (a state key, from the thread's initial values or its first input).
- `state`: state keys whose values are personal (in input, node updates, state edits,
  a fork's carried state).
- `payload`: keys of an interrupt's payload (when it is a dict) that are personal.
- `metadata`: metadata keys that are personal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from domain.errors import GraphDefinitionError

SUBJECT_PLACES = ("metadata", "state")


@dataclass(frozen=True)
class Personal:
    """A graph's personal-data declaration (see the module's docstring)."""

    subject: str
    state: tuple[str, ...] = ()
    payload: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        place, _, key = self.subject.partition(":")
        if place not in SUBJECT_PLACES or not key:
            msg = (
                f"Personal(subject={self.subject!r}) must name where the data subject's id "
                "is: 'metadata:KEY' or 'state:KEY'"
            )
            raise GraphDefinitionError(msg)
        for name in ("state", "payload", "metadata"):
            keys = getattr(self, name)
            if isinstance(keys, str) or not all(isinstance(k, str) and k for k in keys):
                msg = f"Personal({name}=...) must be a tuple of key names, not {keys!r}"
                raise GraphDefinitionError(msg)
            object.__setattr__(self, name, tuple(keys))

    @property
    def subject_place(self) -> str:
        return self.subject.partition(":")[0]

    @property
    def subject_key(self) -> str:
        return self.subject.partition(":")[2]

    @property
    def state_keys(self) -> frozenset[str]:
        """The state keys protected: those declared, and the subject's own if in state."""
        extra = (self.subject_key,) if self.subject_place == "state" else ()
        return frozenset((*self.state, *extra))

    @property
    def metadata_keys(self) -> frozenset[str]:
        """The metadata keys protected: those declared, and the subject's own if there."""
        extra = (self.subject_key,) if self.subject_place == "metadata" else ()
        return frozenset((*self.metadata, *extra))

    def subject_in(self, metadata: Mapping[str, Any], values: Mapping[str, Any]) -> str | None:
        """The data subject's id as `metadata` and `values` hold it (None: not given yet)."""
        found = (metadata if self.subject_place == "metadata" else values).get(self.subject_key)
        if found is None or isinstance(found, dict | list):
            return None
        return str(found)
