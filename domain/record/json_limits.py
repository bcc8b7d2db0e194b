"""What a JSON value may hold to be recorded: a bounded depth and storable text.

Every value Holdpoint records (inputs, node updates, `interrupt()` values,
resumes, metadata) and every JSON request body is held to four rules, so
that each store, each read model and each response can carry it unchanged:

- It nests at most `MAX_JSON_DEPTH` (100) arrays and objects deep. Deeper
  values would break somewhere: Python's JSON codec and pydantic's serializer
  stop at a few hundred levels, orjson at 255.
- Its strings hold no U+0000 (NUL): PostgreSQL's text and JSONB cannot store
  it, so the read models could not either.
- Its strings are valid Unicode: no lone surrogate (`"\\ud800"` in JSON text),
  which UTF-8 cannot encode.
- Its numbers are JSON numbers: no NaN or Infinity, which Python's `json`
  reads and writes but no other JSON reader accepts.

The checks scan JSON text, so they cost a few string scans in C for the
values met in practice and a walk over the brackets only for values with
more than `MAX_JSON_DEPTH` of them.
"""

from __future__ import annotations

import json
import re

MAX_JSON_DEPTH = 100

# A JSON string literal (its escapes included), to skip brackets inside strings.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
# An escape (not an escaped backslash followed by text) of NUL, or of a surrogate.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_NON_JSON_NUMBER = re.compile(r"NaN|Infinity")
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text nests arrays and objects more than `limit` deep."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def has_nul_escape(text: str) -> bool:
    """Whether the JSON text has a string with U+0000 in it (written `\\u0000`)."""
    return "\\u0000" in text and _NUL_ESCAPE.search(text) is not None


def has_non_json_number(text: str) -> bool:
    """Whether the JSON text has NaN or Infinity outside a string (Python's JSON reads them,
    JSON has no such numbers)."""
    if "NaN" not in text and "Infinity" not in text:
        return False
    return _NON_JSON_NUMBER.search(_STRING.sub('""', text)) is not None


def has_lone_surrogate_escape(text: str) -> bool:
    """Whether the JSON text escapes a surrogate that is not half of a pair.

    Surrogate escapes are common (`json.dumps` writes each emoji as a pair), so
    a text that has any is decoded and encoded again to find out exactly.
    """
    if "\\u" not in text or _SURROGATE_ESCAPE.search(text) is None:
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False  # not JSON: the parser will say so
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_text_problem(text: str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why JSON text (a request body) may not be recorded, or None when it may."""
    if depth_exceeds(text, limit):
        return f"it nests arrays and objects more than {limit} levels deep"
    if has_nul_escape(text):
        return "a string holds U+0000 (NUL), which cannot be stored"
    if has_non_json_number(text):
        return "NaN and Infinity are not JSON numbers"
    if has_lone_surrogate_escape(text):
        return "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not Unicode"
    return None


def encoded_value_problem(text: str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why a value, dumped by `json` with `ensure_ascii=False`, may not be recorded.

    Such text escapes NUL as `\\u0000` and leaves a lone surrogate as it is.
    """
    if depth_exceeds(text, limit):
        return f"it nests arrays and objects more than {limit} levels deep"
    if has_nul_escape(text):
        return "a string holds U+0000 (NUL), which cannot be stored"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "a string holds a lone UTF-16 surrogate, which is not Unicode"
    return None
