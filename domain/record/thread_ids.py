"""The rule every new thread id follows, so that any client can name it in a URL path.

The runtime applies it to the ids it is given for new threads of its own making (a
fork's `fork_thread_id`); the HTTP API applies it to every thread id it records.
"""

from __future__ import annotations

from domain.errors import InvalidThreadIdError

THREAD_ID_MAX = 256
THREAD_ID_RULE = (
    f"1 to {THREAD_ID_MAX} printable characters, none of / \\ ? # %, "
    "not . or .., without leading or trailing spaces"
)
# The part of the rule that a JSON Schema pattern can say (the OpenAPI document shows it).
THREAD_ID_PATTERN = r"^[^/\\?#%\x00-\x1f\x7f]+$"
_URL_SYNTAX = frozenset("/\\?#%")


def thread_id_problem(thread_id: str) -> str | None:
    """Why a thread id may not be recorded, or None when it may."""
    if not 1 <= len(thread_id) <= THREAD_ID_MAX:
        return f"it has {len(thread_id)} characters; a thread id is {THREAD_ID_RULE}"
    bad = next((c for c in thread_id if c in _URL_SYNTAX or not c.isprintable()), None)
    if bad is not None or thread_id in (".", "..") or thread_id != thread_id.strip(" "):
        what = f"it has {bad!r}" if bad is not None else f"{thread_id!r} is not allowed"
        return f"{what}; a thread id is {THREAD_ID_RULE}"
    return None


def checked_thread_id(value: object, what: str) -> str:
    """`value` as a new thread id, or InvalidThreadIdError naming `what` and the rule."""
    if not isinstance(value, str):
        msg = f"Invalid {what}: a thread id is text ({THREAD_ID_RULE}), not {type(value).__name__}"
        raise InvalidThreadIdError(msg)
    problem = thread_id_problem(value)
    if problem is not None:
        raise InvalidThreadIdError(f"Invalid {what}: {problem}")
    return value
