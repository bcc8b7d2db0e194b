"""The graph digest: one hash of a graph's structure and of its nodes' code.

Recorded when a thread starts, it says which version of the graph and of its
node and routing functions a thread ran. Code is fingerprinted by its
bytecode, constants and names (nested code objects included), so renaming a
local variable changes nothing and changing a constant or a call does. What a
function calls is covered by name only (a helper's code, a reducer's code),
as are values read from outside the code: replay is the check for those.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from types import CodeType
from typing import TYPE_CHECKING, Any

from domain.record.hashing import canonical_json

if TYPE_CHECKING:
    from domain.graph.definition import GraphDefinition


def graph_digest(builder: GraphDefinition) -> str:
    structure = {
        "nodes": {name: code_digest(spec.action) for name, spec in builder.nodes.items()},
        "edges": sorted(builder.edges),
        "waiting_edges": sorted([list(starts), end] for starts, end in builder.waiting_edges),
        "branches": {
            source: [
                [
                    code_digest(b.path),
                    None if b.path_map is None else sorted(map(str, b.path_map.values())),
                ]
                for b in branches
            ]
            for source, branches in builder.branches.items()
        },
        "channels": {key: ch.reducer_name for key, ch in builder.channels.items()},
    }
    return hashlib.sha256(canonical_json(structure).encode()).hexdigest()


def code_digest(action: Callable[..., Any]) -> str:
    code = getattr(action, "__code__", None) or getattr(type(action).__call__, "__code__", None)
    if not isinstance(code, CodeType):
        name = getattr(action, "__qualname__", type(action).__qualname__)
        return hashlib.sha256(name.encode()).hexdigest()
    digest = hashlib.sha256()
    _feed(digest, code)
    return digest.hexdigest()


def _feed(digest: Any, code: CodeType) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, CodeType):
            _feed(digest, const)
        else:
            digest.update(repr(const).encode())
