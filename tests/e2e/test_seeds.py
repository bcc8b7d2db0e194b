"""The seed programs run on Holdpoint and print what they print on LangGraph.

Each example runs as a script, in a fresh interpreter, from the repository
root. Interrupt ids differ between the two systems (each derives its own),
so they are masked before comparing; everything else must match line by line.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENDORED = HERE / "seed_outputs.txt"
ANCHORS = REPO.parent / "shared" / "anchors" / "seed_outputs.txt"
INTERRUPT_ID = re.compile(r"id='[0-9a-f]{32}'")

REFUND_EXAMPLES = {
    "refund_approval.py": "seed_refund_1.py",
    "refund_threshold.py": "seed_refund_2.py",
}
DRAFT = "Draft: This is the generated content that requires review."


def mask(line: str) -> str:
    return INTERRUPT_ID.sub("id='…'", line)


def sections(text: str) -> dict[str, list[str]]:
    """The recorded outputs, by program: `=== python NAME` starts each section."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("=== python "):
            current = found.setdefault(line.removeprefix("=== python ").strip(), [])
        else:
            current.append(line)
    return found


def run_python(*args: str) -> list[str]:
    """Run `python ARGS` from the repository root; its stdout lines."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    completed = subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    return completed.stdout.splitlines()


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", REPO / "examples" / name)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_vendored_outputs_equal_the_anchors():
    if not ANCHORS.exists():
        pytest.skip(f"{ANCHORS} is not present")
    assert VENDORED.read_text() == ANCHORS.read_text()


def test_vendored_outputs_hold_both_refund_seeds():
    assert set(sections(VENDORED.read_text())) >= set(REFUND_EXAMPLES.values())


@pytest.mark.parametrize(("example", "seed"), sorted(REFUND_EXAMPLES.items()))
def test_refund_example_prints_what_langgraph_prints(example, seed):
    # Given the output LangGraph printed for the seed program
    expected = [mask(line) for line in sections(VENDORED.read_text())[seed]]
    # When the same program runs on Holdpoint
    actual = [mask(line) for line in run_python(f"examples/{example}")]
    # Then every line matches, interrupt ids aside
    assert actual == expected


@pytest.mark.parametrize("example", sorted(REFUND_EXAMPLES))
def test_refund_example_differs_from_its_seed_only_in_imports(example):
    seed = REFUND_EXAMPLES[example]
    seed_file = REPO.parent / "shared" / "anchors" / seed
    if not seed_file.exists():
        pytest.skip(f"{seed_file} is not present")
    ported = seed_file.read_text().replace("from langgraph.", "from domain.")
    assert (REPO / "examples" / example).read_text() == ported


@pytest.mark.parametrize("decision", ["approved", "changes_requested"])
def test_content_review_prints_the_seed_stages(decision):
    # Given what seed 000's plain-Python demo prints for this decision
    reference = (HERE / "seed_000_breakpoint.py").read_text()
    seed_choice = 'decision = "approved"'
    assert seed_choice in reference
    expected = run_python("-c", reference.replace(seed_choice, f"decision = {decision!r}"))
    # When the Holdpoint graph runs as a script
    actual = run_python("examples/content_review.py", decision)
    # Then it prints the same three stages, with the same values
    assert [line.split(":", 1)[0] for line in actual] == [
        "After generation",
        "Interrupt payload",
        "After resume",
    ]
    assert actual == expected


def test_content_review_final_state_is_the_seeds():
    module = load_example("content_review.py")

    final = module.main("approved", thread_id="content-review-final")

    assert final == {"content": DRAFT, "approval": "approved", "status": "approved"}
    snapshot = module.graph.get_state({"configurable": {"thread_id": "content-review-final"}})
    assert snapshot.values == final
    assert snapshot.next == ()


def test_content_review_records_the_reviewer_and_the_decision():
    module = load_example("content_review.py")

    module.main("changes_requested", thread_id="content-review-audit")

    events = module.graph.checkpointer.thread_events("content-review-audit")
    resumed = [e for e in events if type(e).__name__ == "InterruptResumed"]
    assert len(resumed) == 1
    assert resumed[0].resume == "changes_requested"
    assert resumed[0].decision == "reject"
    assert resumed[0].actor["id"] == "rita"
    assert resumed[0].actor["role"] == "reviewer"
    assert type(events[-1]).__name__ == "ThreadCompleted"


def test_content_review_exposes_its_builder_and_graph():
    module = load_example("content_review.py")

    assert set(module.builder.nodes) == {"generate", "review"}
    assert module.graph.name == "content_review"


@pytest.mark.parametrize(("example", "seed"), sorted(REFUND_EXAMPLES.items()))
def test_refund_seed_on_real_langgraph_with_only_the_saver_changed(example, seed, tmp_path):
    # Given the seed program itself (the example with LangGraph's imports back), on
    # HoldpointSaver in place of InMemorySaver
    source = (REPO / "examples" / example).read_text().replace("from domain.", "from langgraph.")
    on_holdpoint = source.replace(
        "from langgraph.checkpoint.memory import InMemorySaver",
        "from langgraph.checkpoint.holdpoint import HoldpointSaver",
    ).replace("checkpointer=InMemorySaver()", "checkpointer=HoldpointSaver()")
    assert on_holdpoint.count("HoldpointSaver") == 2
    program = tmp_path / seed
    program.write_text(on_holdpoint)
    # When it runs on real LangGraph
    actual = [mask(line) for line in run_python(str(program))]
    # Then it prints what LangGraph printed with its own saver
    assert actual == [mask(line) for line in sections(VENDORED.read_text())[seed]]
