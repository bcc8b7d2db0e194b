"""axe-core in the browser tests: the WCAG 2 A and AA rules run on a page as it stands.

axe-core is the npm package pinned in tests/js (`make` installs it, `npm ci --prefix
tests/js`). It is injected as a script, which the UI's strict CSP would refuse: the
page's browser context must be opened with `bypass_csp=True` (`accessible_context`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.ci import missing

AXE = Path(__file__).parents[2] / "js" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_2_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def require_axe() -> None:
    if not AXE.exists():
        missing("the accessibility checks", f"no {AXE}: `npm ci --prefix tests/js`")


def accessible_context(browser: Any, **options: Any) -> Any:
    """A browser context into whose pages axe-core can be injected."""
    require_axe()
    return browser.new_context(bypass_csp=True, **options)


def axe_violations(page: Any) -> list[tuple[str, str, list[Any]]]:
    """Each WCAG 2 A/AA rule the page breaks: (rule id, its help text, the elements)."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", WCAG_2_A_AA
    )
    return [
        (rule["id"], rule["help"], [node["target"] for node in rule["nodes"]])
        for rule in result["violations"]
    ]
