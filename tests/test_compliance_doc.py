"""docs/compliance.md names, for each requirement, the test that shows it: each test it
names exists, so the page cannot point at a test that was renamed or removed."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "compliance.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def test_every_test_the_compliance_page_names_exists():
    named = NAMED.findall(PAGE.read_text(encoding="utf-8"))
    assert len(named) >= 30
    missing = [
        f"{file}::{test}"
        for file, test in named
        if not (REPO / file).exists()
        or not re.search(rf"^def {test}\(", (REPO / file).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []


def test_the_page_covers_each_requirement_the_issue_lists():
    text = PAGE.read_text(encoding="utf-8")
    for requirement in (
        "12(1)", "12(2)", "12(3)", "14(4)(a)", "14(4)(b)", "14(4)(c)", "14(4)(d)",
        "14(4)(e)", "14(5)", "Art. 19", "26(2)", "26(5)", "26(6)", "Art. 73", "Art. 17",
        "A.6.2.8", "does not do",
    ):  # fmt: skip
        assert requirement in text, requirement
