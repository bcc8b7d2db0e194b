"""What a JSON value may hold to be recorded: bounded depth, storable text, JSON numbers."""

from __future__ import annotations

import json

import pytest

from domain.errors import NotSerializableError
from domain.record.hashing import to_json
from domain.record.json_limits import (
    MAX_JSON_DEPTH,
    depth_exceeds,
    encoded_value_problem,
    has_lone_surrogate_escape,
    has_non_json_number,
    has_nul_escape,
    json_text_problem,
)
from domain.types import Command
from tests.graphs import refund_graph


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_depth_counts_arrays_and_objects_but_not_brackets_inside_strings():
    assert not depth_exceeds(json.dumps(nested(MAX_JSON_DEPTH)))
    assert depth_exceeds(json.dumps(nested(MAX_JSON_DEPTH + 1)))
    assert depth_exceeds("[" * 100_000 + "]" * 100_000)
    assert not depth_exceeds(json.dumps({"text": "[" * 5_000 + '{"\\"'}))


def test_nul_and_lone_surrogates_are_found_only_as_escapes_of_their_own():
    assert has_nul_escape(json.dumps("a\x00b"))
    assert not has_nul_escape(json.dumps("a\\u0000b"))  # a backslash, then text
    assert has_lone_surrogate_escape('"\\ud800"')
    assert has_lone_surrogate_escape('{"\\udc00": 1}')
    assert not has_lone_surrogate_escape(json.dumps("\U0001f600"))  # a pair: an emoji
    assert not has_lone_surrogate_escape(json.dumps("\\ud800"))  # a backslash, then text


def test_nan_and_infinity_are_found_outside_strings_only():
    assert has_non_json_number('{"a": NaN}')
    assert has_non_json_number("[-Infinity]")
    assert not has_non_json_number('{"NaN": "Infinity"}')


def test_the_problem_with_a_body_is_named():
    assert "more than 100 levels deep" in json_text_problem("[" * 101 + "]" * 101)
    assert "U+0000" in json_text_problem('"\\u0000"')
    assert "lone UTF-16 surrogate" in json_text_problem('"\\udfff"')
    assert "NaN and Infinity" in json_text_problem("NaN")
    assert json_text_problem('{"ok": ["\\ud83d\\ude00", 1.5e300, "e\\u0301"]}') is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (nested(MAX_JSON_DEPTH + 1), "more than 100 levels deep"),
        (nested(50_000), "more than 100 levels deep"),
        ({"k": "a\x00b"}, r"U\+0000"),
        ("\ud800", "lone UTF-16 surrogate"),
        ({"\udc00": 1}, "lone UTF-16 surrogate"),
        (float("nan"), "not JSON-serialisable"),
    ],
)
def test_a_value_that_cannot_be_recorded_is_refused_naming_it(value, fragment):
    with pytest.raises(NotSerializableError, match=fragment) as raised:
        to_json(value, "The resume value")
    assert str(raised.value).startswith("The resume value")


def test_unicode_that_can_be_stored_is_kept_exactly():
    for text in ("e\u0301", "\u00e9", "\u202eevil", "\U0001f469\u200d\U0001f467", "a\u200bb"):
        assert to_json({text: [text]}, "The value") == {text: [text]}


def test_a_reason_that_cannot_be_recorded_is_refused_and_records_nothing(store):
    # Given a refund thread paused at its interrupt
    graph = refund_graph(store)
    config = {"configurable": {"thread_id": "t-reason"}}
    graph.invoke({"refund_amount": 500.0}, config)
    events = len(store.thread_events("t-reason"))
    # When a Python caller answers, or cancels, with a reason holding NUL
    answer = {"configurable": {**config["configurable"], "reason": "ok\x00"}}
    with pytest.raises(NotSerializableError, match="The reason"):
        graph.invoke(Command(resume=True), answer)
    with pytest.raises(NotSerializableError, match="The reason"):
        store.cancel("t-reason", {"id": "ops"}, "stop\x00")
    # Then nothing is recorded
    assert len(store.thread_events("t-reason")) == events


FLAT_OBJECTS = [
    {},
    {"n": 1, "ok": True, "none": None, "ratio": 0.5, "text": "plain"},
    {"big": 2**80, "negative": -0.0, "tiny": 1e-300},
    {"unicode": "caf\u00e9", "emoji": "\U0001f600"},
    {"nul": "a\x00b"},
    {"a\x00": 1},
    {"lone": "\ud800"},
    {"nan": float("nan")},
    {"inf": float("inf")},
    {1: "int key"},
    {"nested": {"x": 1}},
    {"list": [1, 2]},
    {"tuple": (1, 2)},
]


@pytest.mark.parametrize("value", FLAT_OBJECTS, ids=repr)
def test_a_flat_object_is_normalised_as_the_json_round_trip_does(value):
    """to_json takes a shortcut for flat objects of plain scalars: given any object, it
    returns what the JSON text round trip returns, or refuses it as that does."""
    try:
        expected = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
        problem = encoded_value_problem(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except ValueError:
        expected, problem = None, "not JSON"
    if problem is not None:
        with pytest.raises(NotSerializableError):
            to_json(value, "the update")
        return
    normalised = to_json(value, "the update")
    assert normalised == expected
    assert [type(v) for v in normalised.values()] == [type(v) for v in expected.values()]
    assert normalised is not value  # a copy: the caller's object is not recorded
