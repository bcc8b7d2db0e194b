"""The integrity package sits between the entry points and domain: never back."""

from __future__ import annotations

import pytest

from tests.test_architecture import imports_of, module_name, modules_under

INTEGRITY_MODULES = modules_under("integrity")


def test_the_integrity_package_has_modules_to_check():
    assert len(INTEGRITY_MODULES) > 5


@pytest.mark.parametrize("path", INTEGRITY_MODULES, ids=module_name)
def test_integrity_modules_never_import_api_service_or_projections(path):
    # When
    above = {"api", "service", "projections"}
    bad = [m for m in imports_of(path) if m.split(".", maxsplit=1)[0] in above]

    # Then
    assert bad == [], f"{module_name(path)} imports {bad}"


def test_no_domain_module_imports_integrity():
    # When
    bad = {
        module_name(path): found
        for path in modules_under("domain")
        if (found := [m for m in imports_of(path) if m.split(".", maxsplit=1)[0] == "integrity"])
    }

    # Then
    assert bad == {}
