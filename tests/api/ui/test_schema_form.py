"""`api.ui.schema_form`: an edit's value as fields of a JSON Schema, and read back.

The schema is the interrupt's declared `response_schema` (a JSON Schema, or a type the
saver recorded as one), else the shape of its payload's proposal; a posted form is
read back along the same schema and checked again.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Interrupt
from pydantic import BaseModel

from api.ui.schema_form import SchemaFormError, edit_form, value_of
from saver.values import to_record


class Account(BaseModel):
    iban: str


class Terms(BaseModel):
    amount: int
    account: Account
    tags: list[str] = []


def record(payload: Any, schema: Any = None) -> dict[str, Any]:
    return {"value": payload, "response_schema": schema}


def names(field: Any) -> list[tuple[str, str, bool]]:
    """Each leaf field: its name, kind and whether it is required."""
    if field.kind == "object":
        return [leaf for child in field.children for leaf in names(child)]
    return [(field.name, field.kind, field.required)]


def test_a_type_recorded_as_its_schema_becomes_fields_its_references_followed():
    # Given a pydantic model as the declared answer, recorded by the saver
    asked = Interrupt({"question": "Terms?"}, "i-1", response_schema=Terms)
    schema = to_record(asked)["response_schema"]  # what HoldpointSaver keeps of it
    assert schema["$type"] == "schema"

    # When
    edit = edit_form(record({"question": "Terms?"}, schema))

    # Then each field is there, the nested model's too, and a list is edited as JSON
    assert edit is not None
    assert edit.source == "response_schema"
    assert names(edit.root) == [
        ("value/amount", "integer", True),
        ("value/account/iban", "string", True),
        ("value/tags", "json", False),
    ]


def test_a_posted_form_is_read_back_along_the_schema():
    edit = edit_form(record({"q": 1}, Terms.model_json_schema()))
    assert edit is not None

    value = value_of(
        {"value/amount": "12", "value/account/iban": "NL91", "value/tags": '["a", "b"]'}, edit
    )

    assert value == {"amount": 12, "account": {"iban": "NL91"}, "tags": ["a", "b"]}


def test_an_optional_field_left_empty_is_left_out_and_a_required_one_is_named():
    edit = edit_form(record({"q": 1}, Terms.model_json_schema()))
    assert edit is not None

    assert value_of({"value/amount": "3", "value/account/iban": ""}, edit) == {
        "amount": 3,
        "account": {"iban": ""},
    }
    with pytest.raises(SchemaFormError, match=r"Amount: required; Tags: not valid JSON"):
        value_of({"value/amount": " ", "value/tags": "[a"}, edit)


def test_a_number_outside_its_bounds_or_not_whole_is_refused():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 0},
            "x": {"type": "number", "maximum": 1.5},
        },
    }
    edit = edit_form(record({}, schema))
    assert edit is not None

    with pytest.raises(
        SchemaFormError, match=r"n: '2.5' is not a whole number; x: must be at most"
    ):
        value_of({"value/n": "2.5", "value/x": "2"}, edit)
    with pytest.raises(SchemaFormError, match=r"n: must be more than 0"):
        value_of({"value/n": "0"}, edit)
    assert value_of({"value/n": "1", "value/x": "1.25"}, edit) == {"n": 1, "x": 1.25}


def test_without_a_schema_the_proposal_gives_the_shape_and_the_values():
    proposal = {"amount": 500, "note": "late", "urgent": False, "lines": [1, 2]}

    edit = edit_form(record({"question": "Refund?", "proposal": proposal}))

    assert edit is not None
    assert edit.source == "proposal"
    assert [(c.name, c.kind, c.value) for c in edit.root.children] == [
        ("value/amount", "integer", "500"),
        ("value/note", "string", "late"),
        ("value/urgent", "boolean", False),
        ("value/lines", "json", "[\n  1,\n  2\n]"),
    ]
    posted = {"value/amount": "450", "value/note": "", "value/lines": "[1]"}
    assert value_of(posted, edit) == {"amount": 450, "note": "", "urgent": False, "lines": [1]}


def test_a_key_with_a_slash_is_named_as_a_json_pointer():
    edit = edit_form(record({"proposal": {"a/b": "x", "c~d": "y"}}))

    assert edit is not None
    assert [c.name for c in edit.root.children] == ["value/a~1b", "value/c~0d"]
    assert value_of({"value/a~1b": "1", "value/c~0d": "2"}, edit) == {"a/b": "1", "c~d": "2"}


@pytest.mark.parametrize(
    "payload",
    [
        {"question": "Refund?"},  # no proposal and no schema: a JSON editor
        {"action_requests": [{"name": "t", "args": {}}], "review_configs": []},  # a review
    ],
)
def test_no_fields_where_nothing_gives_the_answers_shape(payload):
    assert edit_form(record(payload)) is None
