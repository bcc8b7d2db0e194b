"""Seed 000: the plain-Python breakpoint/continue demo (reference output).

Its code blocks from seeds/000_*.txt, reassembled (the page lost the
indentation) and laid out by ruff format. tests/e2e/test_seeds.py checks that
examples/content_review.py prints what this prints.
"""

# imports
import copy
from dataclasses import dataclass
from typing import TypedDict


class ReviewState(TypedDict):
    content: str
    approval: str
    status: str


@dataclass
class InterruptRequest:
    payload: dict

    @staticmethod
    def interrupt(payload: dict) -> "InterruptRequest":
        """Create an interrupt request with the given payload."""
        return InterruptRequest(payload=payload)


def generate_content(state: ReviewState) -> ReviewState:
    state = copy.deepcopy(state)
    state["content"] = "Draft: This is the generated content that requires review."
    state["status"] = "needs_review"
    return state


def request_review(state: ReviewState) -> InterruptRequest:
    """Simulate a node issuing an interrupt for human review."""
    payload = {"content": state["content"], "reason": "Please approve or request changes."}
    return InterruptRequest.interrupt(payload=payload)


def resume_workflow(state: ReviewState, approval: str) -> ReviewState:
    """Continue workflow based on the approval decision."""
    state = copy.deepcopy(state)
    state["approval"] = approval
    if approval.lower() in ("approved", "approve", "yes"):
        state["status"] = "approved"
    else:
        state["status"] = "changes_requested"
    return state


# initial state
state: ReviewState = {"content": "", "approval": "", "status": "started"}
# Step 1: generate content
state = generate_content(state)
print("After generation:", state)
# Step 2: interrupt for review
interrupt = request_review(state)
print("Interrupt payload:", interrupt.payload)
# (External human reviews the payload and returns a decision.)
# Simulate a reviewer decision:
decision = "approved"  # or "changes_requested"
# Step 3: resume workflow with the decision
state = resume_workflow(state, decision)
print("After resume:", state)
