"""LangGraph's rule for a resume value that names the interrupts it answers.

`Command(resume={interrupt_id: answer, ...})` answers several pending interrupts at once;
any other value answers the one pending. Both engines, and the HTTP layer, tell the two
apart the same way.
"""

from __future__ import annotations

from typing import Any

_INTERRUPT_ID_CHARS = frozenset("0123456789abcdef")


def is_interrupt_id(key: object) -> bool:
    """LangGraph's rule: a resume map's keys are all 32 lowercase hex digits."""
    return isinstance(key, str) and len(key) == 32 and set(key) <= _INTERRUPT_ID_CHARS


def resume_map(resume: Any) -> dict[str, Any] | None:
    """`Command(resume=...)`'s value as {interrupt_id: answer} when it is a resume map (a
    dict whose keys are all interrupt ids), else None: one answer to the one pending."""
    if isinstance(resume, dict) and resume and all(map(is_interrupt_id, resume)):
        return dict(resume)
    return None
