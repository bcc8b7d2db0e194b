"""The value of an "Approve with edits" as a form: fields from a JSON Schema.

The schema is the one the interrupt declares for its answer (LangGraph's
`interrupt(value, response_schema=...)`: a JSON Schema, or a type the saver recorded
as its JSON Schema), or, failing that, the shape of the proposal its payload makes
(`{"proposal": {...}}`: the reviewer edits the proposal). Strings, numbers, integers,
booleans, enums and nested objects become fields; any other part (a list, a union) an
editor of its JSON. The browser checks the fields before the form is sent (HTML
constraints and decision.js); `value_of` checks them again here, against the same
schema read from the record, never from the form.

A field's name is a JSON Pointer under `value` (`value/customer/id`), so that a posted
form is read back along the schema.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from domain.oversight.hold_points import review_in

ROOT = "value"
MAX_DEPTH = 5
SCALARS = ("string", "number", "integer", "boolean")
# Each bound: whether it is a lower one, and its words.
BOUNDS = {
    "minimum": (True, "at least"),
    "maximum": (False, "at most"),
    "exclusiveMinimum": (True, "more than"),
    "exclusiveMaximum": (False, "less than"),
}
TAG = "$type"  # the saver's tag of a type recorded as its JSON Schema (saver/values.py)


_MISSING: Any = object()  # an optional field left empty: not in the value


class SchemaFormError(ValueError):
    """The posted fields do not make a value the schema takes: each problem, in words."""


@dataclass(frozen=True)
class Field:
    """One form field: `kind` is a JSON type, "enum", "object" (its `children`), or
    "json" (an editor of that part's JSON)."""

    name: str
    label: str
    kind: str
    value: Any = None  # as the input shows it: text, a bool, an option's index
    required: bool = False
    description: str | None = None
    options: tuple[str, ...] = ()
    limits: dict[str, Any] = field(default_factory=dict)  # HTML attributes that check it
    children: tuple[Field, ...] = ()

    @property
    def id(self) -> str:
        return "f-" + re.sub(r"[^A-Za-z0-9_-]", "_", self.name)


@dataclass(frozen=True)
class EditForm:
    """The fields of an edit, and where their schema comes from."""

    source: str  # "response_schema", "proposal", or "value" (a tool call's arguments)
    schema: dict[str, Any]
    root: Field


def edit_form(record: dict[str, Any]) -> EditForm | None:
    """The edit of this open interrupt as fields; None for a JSON editor alone (no schema
    that fits, or a review of tool calls, which is edited action by action)."""
    if review_in(record) is not None:
        return None
    payload = record.get("value")
    proposal = payload.get("proposal") if isinstance(payload, dict) else None
    declared = declared_schema(record.get("response_schema"))
    if declared is not None and _kind(_resolved(declared, declared)) != "json":
        return EditForm(
            "response_schema",
            declared,
            _field(declared, declared, ROOT, "Value", proposal, True, 0),
        )
    if isinstance(proposal, dict) and proposal:
        schema = schema_of(proposal)
        return EditForm(
            "proposal", schema, _field(schema, schema, ROOT, "Proposal", proposal, True, 0)
        )
    return None


def value_form(value: Any, root: str, label: str) -> EditForm:
    """A value (a tool call's arguments) as fields of its own shape."""
    schema = schema_of(value)
    return EditForm("value", schema, _field(schema, schema, root, label, value, True, 0))


def declared_schema(schema: Any) -> dict[str, Any] | None:
    """An interrupt's `response_schema` as a JSON Schema (a recorded type: its schema)."""
    if isinstance(schema, dict) and schema.get(TAG) == "schema":
        schema = schema.get("json_schema")
    return schema if isinstance(schema, dict) else None


def schema_of(value: Any) -> dict[str, Any]:
    """The JSON Schema of a proposal's shape: its keys, each of its value's type."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, dict):
        properties = {str(k): schema_of(v) for k, v in value.items()}
        return {"type": "object", "properties": properties, "required": list(properties)}
    return {}  # a list, null: edited as JSON


# -- reading the schema ---------------------------------------------------------------


def _resolved(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a local `$ref` (#/$defs/..., #/definitions/...) followed, once."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = (
                target.get(part.replace("~1", "/").replace("~0", "~"))
                if isinstance(target, dict)
                else None
            )
        return {
            **(target if isinstance(target, dict) else {}),
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
    return schema


def _kind(schema: dict[str, Any]) -> str:
    """What the schema asks for, as a field: a scalar type, "enum", "object", or "json"."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    if "const" in schema:
        return "json"
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: an optional string
        named = [k for k in kind if k != "null"]
        kind = named[0] if len(named) == 1 else None
    if kind in SCALARS:
        return str(kind)
    if kind == "object" and isinstance(schema.get("properties"), dict):
        return "object"
    return "json"


def _field(
    schema: Any, root: dict[str, Any], name: str, label: str, value: Any, required: bool, depth: int
) -> Field:
    schema = _resolved(schema, root)
    kind = _kind(schema) if depth < MAX_DEPTH else "json"
    title = str(schema.get("title") or label)
    description = schema.get("description")
    if value is None and "default" in schema:
        value = schema["default"]
    common: dict[str, Any] = {"name": name, "label": title, "kind": kind, "required": required}
    if isinstance(description, str):
        common["description"] = description
    if kind == "object":
        needed = set(schema.get("required") or [])
        given = value if isinstance(value, dict) else {}
        children = tuple(
            _field(
                sub, root, f"{name}/{_escape(key)}", key, given.get(key), key in needed, depth + 1
            )
            for key, sub in schema["properties"].items()
        )
        return Field(**common, children=children)
    if kind == "enum":
        options = tuple(
            json.dumps(o, ensure_ascii=False) if not isinstance(o, str) else o
            for o in schema["enum"]
        )
        index = schema["enum"].index(value) if value in schema["enum"] else None
        return Field(**common, value=index, options=options)
    if kind == "boolean":
        return Field(**common, value=bool(value))
    if kind in ("number", "integer"):
        shown = "" if isinstance(value, bool) or not isinstance(value, int | float) else str(value)
        return Field(**common, value=shown, limits=_number_limits(schema, kind))
    if kind == "string":
        return Field(
            **common, value=value if isinstance(value, str) else "", limits=_string_limits(schema)
        )
    shown = (
        "" if value is None and not required else json.dumps(value, indent=2, ensure_ascii=False)
    )
    return Field(**common, value=shown)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _number_limits(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    limits: dict[str, Any] = {"step": "1" if kind == "integer" else "any"}
    for word, attribute in (("minimum", "min"), ("maximum", "max")):
        if isinstance(schema.get(word), int | float):
            limits[attribute] = schema[word]
    return limits


def _string_limits(schema: dict[str, Any]) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    for word, attribute in (("minLength", "minlength"), ("maxLength", "maxlength")):
        if isinstance(schema.get(word), int):
            limits[attribute] = schema[word]
    if isinstance(schema.get("pattern"), str):
        limits["data-pattern"] = schema["pattern"]
    return limits


def as_posted(spec: Field, form: dict[str, str]) -> Field:
    """The field showing what was posted, to be corrected (a form the server refused)."""
    if spec.kind == "object":
        return replace(spec, children=tuple(as_posted(child, form) for child in spec.children))
    text = form.get(spec.name, "")
    if spec.kind == "boolean":
        return replace(spec, value=spec.name in form)
    if spec.kind == "enum":
        chosen = int(text) if text.isdigit() and int(text) < len(spec.options) else None
        return replace(spec, value=chosen)
    return replace(spec, value=text)


# -- reading a posted form back --------------------------------------------------------


def value_of(form: dict[str, str], edit: EditForm) -> Any:
    """The value the posted fields make; SchemaFormError naming each field that is wrong."""
    problems: list[str] = []
    value = _read(edit.root, edit.schema, edit.schema, form, problems)
    if problems:
        raise SchemaFormError("; ".join(problems))
    return value


def _read(
    spec: Field, schema: Any, root: dict[str, Any], form: dict[str, str], problems: list[str]
) -> Any:
    schema = _resolved(schema, root)
    if spec.kind == "object":
        built: dict[str, Any] = {}
        for child, (key, sub) in zip(spec.children, schema["properties"].items(), strict=True):
            value = _read(child, sub, root, form, problems)
            if value is not _MISSING:
                built[key] = value
        return built
    if spec.kind == "boolean":
        return spec.name in form
    text = form.get(spec.name, "")
    empty = text == "" if spec.kind == "string" else text.strip() == ""
    if empty and not (spec.kind == "string" and spec.required):  # a required string may be ""
        if spec.required:
            problems.append(f"{spec.label}: required")
        return _MISSING
    try:
        value = _parse(spec, schema, text)
    except ValueError as error:
        problems.append(f"{spec.label}: {error}")
        return _MISSING
    return value


def _parse(spec: Field, schema: dict[str, Any], text: str) -> Any:
    if spec.kind == "enum":
        if not text.isdigit() or int(text) >= len(schema["enum"]):
            raise ValueError("choose one of the options")
        return schema["enum"][int(text)]
    if spec.kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not valid JSON ({error.msg} at line {error.lineno})") from None
    if spec.kind == "string":
        _check_string(schema, text)
        return text
    number = _number(spec.kind, text.strip())
    _check_number(schema, number)
    return number


def _number(kind: str, text: str) -> int | float:
    if kind == "integer":
        if not re.fullmatch(r"[+-]?\d+", text):
            raise ValueError(f"{text!r} is not a whole number")
        return int(text)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return (
        int(number)
        if number.is_integer() and "." not in text and "e" not in text.lower()
        else number
    )


def _check_number(schema: dict[str, Any], number: float) -> None:
    bounds = {word: schema.get(word) for word in BOUNDS}
    for word, bound in bounds.items():
        if not isinstance(bound, int | float) or isinstance(bound, bool):
            continue
        below, words = BOUNDS[word]
        if (number < bound if below else number > bound) or (
            word.startswith("exclusive") and number == bound
        ):
            raise ValueError(f"must be {words} {bound}")


def _check_string(schema: dict[str, Any], text: str) -> None:
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if isinstance(shortest, int) and len(text) < shortest:
        raise ValueError(f"must be at least {shortest} characters")
    if isinstance(longest, int) and len(text) > longest:
        raise ValueError(f"must be at most {longest} characters")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, text) is None:
        raise ValueError(f"must match the pattern {pattern}")
