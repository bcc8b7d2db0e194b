"""A key's authority scope and competence attestation, and the check of a decision's scope.

A key may be limited to the graphs it decides on (`graphs`) and to the amounts it
decides (`max_amount`): the amount is the field of the interrupt's payload that the
graph names (`set_oversight(amount_field="amount")`, or `amount_field` in its
holdpoint.toml table; a dotted path reads into nested objects). The check fails closed:
a key with a limit may not decide an interrupt whose amount it cannot read (the graph
names no field, or the payload has no number there).

An attestation (what training or qualification, and when) says why its holder is
competent to decide (EU AI Act Art. 26(2)). Both are recorded on the key and travel on
the actor of every event its holder causes, so each decision shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Any

from domain.errors import InvalidKeyScopeError, OutOfScopeError

ATTESTATION_MAX = 500  # characters of an attestation's text


@dataclass(frozen=True)
class KeyScope:
    """What a key may decide: on these graphs only (None: any), up to this amount (None:
    any)."""

    graphs: tuple[str, ...] | None = None
    max_amount: float | None = None

    def as_record(self) -> dict[str, Any]:
        graphs = None if self.graphs is None else list(self.graphs)
        return {"graphs": graphs, "max_amount": self.max_amount}

    @classmethod
    def of(cls, record: dict[str, Any] | None) -> KeyScope | None:
        if not record:
            return None
        graphs = record.get("graphs")
        return cls(None if graphs is None else tuple(graphs), record.get("max_amount"))


@dataclass(frozen=True)
class Attestation:
    """A competence attestation: its text and the date it was attested on (ISO 8601)."""

    text: str
    attested_on: str

    def as_record(self) -> dict[str, Any]:
        return {"text": self.text, "attested_on": self.attested_on}

    @classmethod
    def of(cls, record: dict[str, Any] | None) -> Attestation | None:
        return None if not record else cls(str(record["text"]), str(record["attested_on"]))


def key_scope(graphs: list[str] | None, max_amount: float | None) -> KeyScope | None:
    """A key's scope as given; None when it has no limit. InvalidKeyScopeError for an
    empty or blank graph list, or an amount that is not a finite number of 0 or more."""
    if graphs is not None:
        graphs = [g.strip() for g in graphs]
        if not graphs or not all(graphs):
            raise InvalidKeyScopeError("A key's graphs name at least one graph, none blank")
    if max_amount is not None and (
        isinstance(max_amount, bool)
        or not isinstance(max_amount, int | float)
        or not math.isfinite(max_amount)
        or max_amount < 0
    ):
        msg = f"A key's max_amount is a finite number, 0 or more, not {max_amount!r}"
        raise InvalidKeyScopeError(msg)
    if graphs is None and max_amount is None:
        return None
    return KeyScope(None if graphs is None else tuple(dict.fromkeys(graphs)), max_amount)


def attestation(text: str | None, attested_on: date | None) -> Attestation | None:
    """A competence attestation as given; both or neither. InvalidKeyScopeError for one
    without the other, a blank or overlong text, or a date in the future."""
    if text is None and attested_on is None:
        return None
    if text is None or attested_on is None:
        raise InvalidKeyScopeError("A competence attestation needs its text and its date, both")
    if not text.strip() or len(text) > ATTESTATION_MAX or not text.isprintable():
        msg = f"An attestation's text is 1 to {ATTESTATION_MAX} printable characters"
        raise InvalidKeyScopeError(msg)
    if attested_on > date.today():
        msg = f"An attestation's date is the day it was attested, not a future one: {attested_on}"
        raise InvalidKeyScopeError(msg)
    return Attestation(text.strip(), attested_on.isoformat())


def check_scope(
    actor: dict[str, Any], graph_id: str, payload: Any, amount_field: str | None
) -> None:
    """OutOfScopeError unless the actor's key may decide a question of `graph_id` asking
    `payload` (its amount at `amount_field`, the field the graph names)."""
    scope = KeyScope.of(actor.get("scope"))
    if scope is None:
        return
    who = f"the key of {actor.get('id')!r}"
    if scope.graphs is not None and graph_id not in scope.graphs:
        msg = (
            f"Graph {graph_id!r} is outside the scope of {who}, which may decide on "
            f"{', '.join(scope.graphs)} only; only this refusal was recorded"
        )
        raise OutOfScopeError(msg)
    if scope.max_amount is None:
        return
    limit = f"{who} may decide amounts up to {scope.max_amount:g}"
    if amount_field is None:
        msg = (
            f"{limit[0].upper()}{limit[1:]}, and graph {graph_id!r} names no amount field "
            "(amount_field), so its amounts cannot be checked; only this refusal was recorded"
        )
        raise OutOfScopeError(msg)
    amount = _amount(payload, amount_field)
    if amount is None:
        msg = (
            f"{limit[0].upper()}{limit[1:]}, and the question has no number at "
            f"{amount_field!r}; only this refusal was recorded"
        )
        raise OutOfScopeError(msg)
    if amount > scope.max_amount:
        msg = (
            f"The amount {amount:g} ({amount_field}) is above the limit of {who}: "
            f"{scope.max_amount:g}; only this refusal was recorded"
        )
        raise OutOfScopeError(msg)


def _amount(payload: Any, path: str) -> float | None:
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
