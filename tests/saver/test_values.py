"""The JSON form of a real LangGraph graph's values (saver/values.py): given a value, when
recorded and read back, then the same value, in JSON an auditor can read; a class the
record names is restored only if it is one Holdpoint restores; never a pickle."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid
from collections import deque
from typing import Any, NamedTuple

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.types import Interrupt, Send
from pydantic import BaseModel

from domain.errors import NotSerializableError
from saver.values import NotRecordableError, from_record, to_record


class Refund(BaseModel):
    amount: int
    at: dt.datetime


@dataclasses.dataclass
class Point:
    x: int
    tags: set[str]


class Colour(enum.Enum):
    RED = "red"


class Pair(NamedTuple):
    left: int
    right: str


VALUES: list[Any] = [
    "plain text",
    42,
    2**70,
    1.5,
    float("inf"),
    None,
    True,
    [1, "two", {"three": 3}],
    {"$type": "a key that looks like a tag"},
    {1: "one", (2, 3): "a tuple key"},
    "nul \x00 inside",
    "\ud800",
    b"\x00bytes",
    bytearray(b"ba"),
    {1, 2},
    frozenset({"f"}),
    deque([1, 2]),
    dt.datetime(2026, 12, 4, 9, 30, tzinfo=dt.UTC),
    dt.date(2026, 12, 4),
    dt.time(9, 30),
    dt.timedelta(days=1, seconds=2),
    uuid.UUID(int=7),
    decimal.Decimal("12.50"),
    Refund(amount=5, at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
    Point(1, {"a"}),
    Colour.RED,
    Pair(1, "b"),
    HumanMessage("hello", id="h-1"),
    AIMessage("", id="a-1", tool_calls=[{"name": "pay", "args": {"n": 1}, "id": "c-1"}]),
    ToolMessage("paid", tool_call_id="c-1", name="pay"),
    RemoveMessage(id="h-1"),
    Interrupt(value={"question": "ok?"}, id="0" * 32),
    Send("node", {"arg": 1}),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_value_reads_back_as_itself_from_json(value):
    recorded = to_record(value)

    back = from_record(json.loads(json.dumps(recorded, allow_nan=False)))

    assert back == value or (isinstance(value, float) and back == value)
    assert type(back) is type(value)


def test_a_tuple_reads_back_as_a_list_as_from_langgraphs_own_savers():
    assert from_record(to_record((1, "a"))) == [1, "a"]


def test_messages_are_recorded_as_their_fields():
    message = AIMessage("", id="a-1", tool_calls=[{"name": "pay", "args": {"n": 1}, "id": "c"}])

    assert to_record(message) == {
        "$type": "message",
        "type": "ai",
        "content": "",
        "id": "a-1",
        "tool_calls": [{"name": "pay", "args": {"n": 1}, "id": "c", "type": "tool_call"}],
    }


def test_a_value_with_no_json_form_is_kept_in_langgraphs_serialization_tagged():
    recorded = to_record(ValueError("boom"))

    assert recorded == {
        "$type": "error",
        "type": "ValueError",
        "message": "boom",
        "repr": "ValueError('boom')",
    }


def test_a_value_even_msgpack_cannot_hold_is_refused_never_pickled():
    class Opaque:
        pass

    with pytest.raises(NotRecordableError, match="Opaque"):
        to_record(Opaque())


def test_a_record_naming_a_class_holdpoint_does_not_restore_is_refused():
    forged = {"$type": "dataclass", "class": "subprocess:Popen", "fields": {"args": ["ls"]}}

    with pytest.raises(NotSerializableError, match="not a class Holdpoint restores"):
        from_record(forged)
