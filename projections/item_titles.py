"""An open interrupt's title, from the template its `interrupt(..., title=...)` declared.

The template's `{field}` placeholders (`{customer.name}` for a nested field) take the
payload's values: text as it is, other values as compact JSON, a missing field as
nothing. The title is made once, when the interrupt is raised, and kept in the queue.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\}")
MAX_TITLE = 200


def render_title(template: str | None, payload: Any) -> str | None:
    """The title `template` gives for `payload`, on one line; None if none or blank."""
    if not template:
        return None
    text = PLACEHOLDER.sub(lambda match: _field(payload, match.group(1)), template)
    text = " ".join(text.split())
    if not text:
        return None
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1] + "…"


def _field(payload: Any, path: str) -> str:
    value = payload
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
