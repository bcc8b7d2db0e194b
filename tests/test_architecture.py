"""Dependencies point one way: api -> service -> projections/integrity -> domain.

Within the domain, the record and its rules (record, oversight, access,
history, integrity) import no engine, and no module anywhere is part of an
import cycle, even one made only of annotations.

Every module is parsed with `ast` (nothing is imported), so a violation is
caught even in a branch that never runs, such as an `if TYPE_CHECKING:` block.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOMAIN_ALLOWED_EVENTSOURCING = {
    "eventsourcing.domain",
    "eventsourcing.application",
    "eventsourcing.persistence",
    "eventsourcing.utils",
}
# Named explicitly because some are in the standard library (sqlite3) and
# would pass the allow-list check on their own.
DOMAIN_FORBIDDEN = {
    "fastapi",
    "psycopg",
    "psycopg_pool",
    "sqlite3",
    "structlog",
    "api",
    "projections",
}


def modules_under(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path = ROOT) -> list[str]:
    """Every module `path` imports, absolute, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module == "eventsourcing":
                found.extend(f"eventsourcing.{alias.name}" for alias in node.names)
            else:
                found.append(module)
    return found


def is_stdlib(module: str) -> bool:
    return module.split(".", maxsplit=1)[0] in sys.stdlib_module_names


def domain_may_import(module: str) -> bool:
    top = module.split(".", maxsplit=1)[0]
    if top in DOMAIN_FORBIDDEN:
        return False
    if top == "domain" or is_stdlib(module):
        return True
    return any(
        module == allowed or module.startswith(allowed + ".")
        for allowed in DOMAIN_ALLOWED_EVENTSOURCING
    )


DOMAIN_MODULES = modules_under("domain")
PROJECTION_MODULES = modules_under("projections")


def test_the_domain_package_has_modules_to_check():
    # Then
    assert len(DOMAIN_MODULES) > 5


@pytest.mark.parametrize("path", DOMAIN_MODULES, ids=module_name)
def test_domain_imports_only_the_standard_library_eventsourcing_core_and_domain(path):
    # When
    bad = [module for module in imports_of(path) if not domain_may_import(module)]

    # Then
    assert bad == [], f"{module_name(path)} imports {bad}"


@pytest.mark.parametrize(
    "path", PROJECTION_MODULES or [None], ids=lambda p: module_name(p) if p else "none"
)
def test_projections_never_import_api(path):
    # Given
    if path is None:
        return

    # When
    bad = [m for m in imports_of(path) if m.split(".", maxsplit=1)[0] == "api"]

    # Then
    assert bad == [], f"{module_name(path)} imports {bad}"


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("json", True),
        ("eventsourcing.domain", True),
        ("eventsourcing.persistence", True),
        ("domain.record.thread", True),
        ("eventsourcing.postgres", False),
        ("eventsourcing.sqlite", False),
        ("sqlite3", False),
        ("fastapi", False),
        ("psycopg", False),
        ("structlog", False),
        ("api.cli.main", False),
        ("projections.runners", False),
    ],
)
def test_the_domain_rule_itself_tells_allowed_from_forbidden(module, allowed):
    # Then
    assert domain_may_import(module) is allowed


def test_relative_imports_are_resolved_against_their_package(tmp_path):
    # Given
    module = tmp_path / "domain" / "graph" / "state.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from . import digest\nfrom .compiled import X\nfrom ..errors import E\n"
        "from eventsourcing import domain, postgres\n"
    )

    # When
    found = imports_of(module, tmp_path)

    # Then
    assert found == [
        "domain.graph",
        "domain.graph.compiled",
        "domain.errors",
        "eventsourcing.domain",
        "eventsourcing.postgres",
    ]


@pytest.mark.parametrize("path", modules_under("persistence"), ids=module_name)
def test_persistence_modules_import_only_the_library_and_drivers(path):
    # Persistence adapters are named by PERSISTENCE_MODULE; they know no Holdpoint layer.
    bad = [
        m
        for m in imports_of(path)
        if m.split(".", maxsplit=1)[0] in {"domain", "api", "projections"}
    ]
    assert bad == [], f"{module_name(path)} imports {bad}"


HTTP_EDGES = ("api.http", "api.ui")


@pytest.mark.parametrize("path", modules_under("service"), ids=module_name)
def test_the_service_layer_imports_no_entry_point_and_no_web_framework(path):
    # When
    bad = [
        m
        for m in imports_of(path)
        if m.split(".", maxsplit=1)[0] in {"api", "fastapi", "starlette", "uvicorn"}
    ]

    # Then
    assert bad == [], f"{module_name(path)} imports {bad}"


@pytest.mark.parametrize(
    "path",
    [
        p
        for package in ("domain", "service", "projections", "integrity", "persistence", "api")
        for p in modules_under(package)
        if not module_name(p).startswith(HTTP_EDGES)
    ],
    ids=module_name,
)
def test_only_the_http_edges_answer_with_problems(path):
    # Rules raise domain or service errors; api/http/problems.py maps them, once.
    bad = [m for m in imports_of(path) if m == "api.http.problems"]
    assert bad == [], f"{module_name(path)} imports {bad}"


ENGINE = ("domain.engine", "domain.graph")
ENGINE_INDEPENDENT = (
    "domain.record",
    "domain.oversight",
    "domain.access",
    "domain.history",
    "domain.integrity",
)


@pytest.mark.parametrize(
    "path",
    [p for p in DOMAIN_MODULES if module_name(p).startswith(ENGINE_INDEPENDENT)],
    ids=module_name,
)
def test_the_record_and_its_rules_import_no_engine(path):
    # A second engine (LangGraph through a checkpointer) writes the same record.
    bad = [m for m in imports_of(path) if m.startswith(ENGINE)]
    assert bad == [], f"{module_name(path)} imports {bad}"


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, at any scope (TYPE_CHECKING too)."""
    paths = {
        module_name(p, root): p
        for package in packages
        for p in sorted((root / package).rglob("*.py"))
    }

    def owner(module: str) -> str:
        while module and module not in paths:
            module = module.rpartition(".")[0]
        return module

    return {
        name: {owner(m) for m in imports_of(path, root) if owner(m)} - {name}
        for name, path in paths.items()
    }


def cycles_of(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start, imported in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(imported)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


PROJECT_PACKAGES = ("domain", "service", "projections", "integrity", "persistence", "api")


def test_no_import_cycle_at_any_scope():
    # When
    cycles = cycles_of(import_graph(ROOT, PROJECT_PACKAGES))

    # Then
    assert cycles == []


def test_the_cycle_check_finds_a_cycle_through_type_checking(tmp_path):
    # Given: a imports b at run time; b imports a only for its annotations
    package = tmp_path / "domain"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from domain.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from domain.a import A\n"
    )
    (package / "c.py").write_text("from domain import a\n")

    # When
    cycles = cycles_of(import_graph(tmp_path, ("domain",)))

    # Then
    assert cycles == [["domain.a", "domain.b"]]
