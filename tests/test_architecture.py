"""Dependencies point one way: api -> projections -> domain.

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
