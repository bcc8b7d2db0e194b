"""The audit package sits between api and domain: api -> audit -> domain, never back."""

from __future__ import annotations

import pytest

from tests.test_architecture import imports_of, module_name, modules_under

AUDIT_MODULES = modules_under("audit")


@pytest.mark.parametrize("path", AUDIT_MODULES, ids=module_name)
def test_audit_modules_never_import_api_or_projections(path):
    # When
    bad = [m for m in imports_of(path) if m.split(".", maxsplit=1)[0] in {"api", "projections"}]

    # Then
    assert bad == [], f"{module_name(path)} imports {bad}"


def test_no_domain_module_imports_audit():
    # When
    bad = {
        module_name(path): found
        for path in modules_under("domain")
        if (found := [m for m in imports_of(path) if m.split(".", maxsplit=1)[0] == "audit"])
    }

    # Then
    assert bad == {}
