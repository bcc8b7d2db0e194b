"""LangGraph's arguments that the native engine does not implement: refused, by name.

`domain.graph` takes LangGraph's names so that a program ports by its imports.
An argument it accepted and then ignored would change what the program does
with no error (a retry policy that never retries, a schema that filters
nothing), so each of LangGraph's arguments is spelt out, in the signatures of
StateGraph, add_node, compile and get_state and in `RUN_OPTIONS` for the run
calls, and one set to what the engine does not do raises UnsupportedFeatureError
naming it. An argument LangGraph does not have either is Python's TypeError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.errors import UnsupportedFeatureError

# LangGraph's deprecated or rarely used keyword arguments, by call: named in the refusal.
KNOWN_EXTRAS = {
    "StateGraph()": ("config_schema", "input", "output"),
    "add_node()": ("input",),
}
# LangGraph's run arguments (invoke, stream and their async forms) but `context` and
# stream()'s `stream_mode`, each with the values that ask what the native engine does:
# each superstep committed before the next (durability "sync"), no breakpoints, the
# whole state out, nothing printed, no subgraph streams.
RUN_OPTIONS: dict[str, tuple[Any, ...]] = {
    "stream_mode": ("values",),  # invoke(): what it returns
    "print_mode": ((), []),
    "output_keys": (None,),
    "interrupt_before": (None,),
    "interrupt_after": (None,),
    "durability": (None, "sync"),
    "subgraphs": (False,),
    "debug": (None, False),
    "checkpoint_during": (None,),
}


def unsupported_message(call: str, name: str) -> str:
    """`name`: an argument's name, or an argument with its value (`stream_mode='debug'`)."""
    given = name if "=" in name else f"{name}=..."
    return (
        f"{call} with {given} is not supported by Holdpoint's native engine "
        "(domain.graph), which refuses it rather than ignore it: leave it out, or run "
        "the graph on LangGraph itself, recorded by Holdpoint all the same: "
        "builder.compile(checkpointer=HoldpointSaver(...)), with "
        "`from langgraph.checkpoint.holdpoint import HoldpointSaver`"
    )


def refuse_unsupported(
    call: str, given: Mapping[str, Any], extras: Mapping[str, Any] | None = None
) -> None:
    """Raise for the first argument of `given` set to anything but its default (None,
    False or empty), and for any of `extras` (a call's `**kwargs`): UnsupportedFeatureError
    for one of LangGraph's, TypeError for one it does not have either."""
    for name in extras or {}:
        if name not in KNOWN_EXTRAS.get(call, ()):
            raise _unexpected(call, name)
        raise UnsupportedFeatureError(unsupported_message(call, name))
    for name, value in given.items():
        if value is not None and value is not False and value not in ((), []):
            raise UnsupportedFeatureError(unsupported_message(call, name))


def refuse_run_options(call: str, options: Mapping[str, Any]) -> None:
    """Raise for a run argument of `options` that asks what the native engine does not do
    (`RUN_OPTIONS`), and TypeError for one LangGraph does not have either."""
    for name, value in options.items():
        if name not in RUN_OPTIONS:
            raise _unexpected(call, name)
        if value not in RUN_OPTIONS[name]:
            raise UnsupportedFeatureError(unsupported_message(call, name))


def _unexpected(call: str, name: str) -> TypeError:
    return TypeError(f"{call} got an unexpected keyword argument {name!r}")
