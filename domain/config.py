"""LangGraph's `get_config()`: the config of the node that is running.

`from domain.config import get_config`, as `from langgraph.config import get_config`.
Its `metadata` names the node (`langgraph_node`), the step (`langgraph_step`) and
the task (`holdpoint_task_id`): the same id on every run of the node in that step,
after a takeover by another runner too, so a node can give it to an external system
as an idempotency key and make its side effect happen once.
"""

from __future__ import annotations

from typing import Any

from domain.engine.task_context import current_task


def get_config() -> dict[str, Any]:
    """The running node's config; RuntimeError outside a running node."""
    try:
        return current_task().config
    except RuntimeError:
        msg = "get_config() was called outside a running graph node"
        raise RuntimeError(msg) from None
