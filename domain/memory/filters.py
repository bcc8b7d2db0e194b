"""The memory store's search filter, as LangGraph's stores read it: each key of the
filter names a top-level field of an item's value, matched exactly, or by operators
`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from domain.errors import InvalidMemoryItemError

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def check_filter(conditions: Any) -> dict[str, Any]:
    """The filter, or InvalidMemoryItemError naming what is wrong with it."""
    if conditions is None:
        return {}
    if not isinstance(conditions, dict):
        raise InvalidMemoryItemError("Invalid filter: an object of field: value or {op: value}")
    for field, condition in conditions.items():
        if isinstance(condition, dict):
            unknown = [op for op in condition if op not in OPERATORS]
            if unknown:
                known = ", ".join(OPERATORS)
                msg = f"Invalid filter on {field!r}: unknown operator {unknown[0]!r} ({known})"
                raise InvalidMemoryItemError(msg)
    return conditions


def matches(value: dict[str, Any], conditions: dict[str, Any]) -> bool:
    """Whether an item's value meets every condition (a value it cannot compare does not)."""
    for field, condition in conditions.items():
        actual = value.get(field)
        tests = condition.items() if isinstance(condition, dict) else [("$eq", condition)]
        for name, expected in tests:
            try:
                if not OPERATORS[name](actual, expected):
                    return False
            except TypeError:  # None or another type: 3 > "a" is no match
                return False
    return True
