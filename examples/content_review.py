"""Seed 000's breakpoint demo, as a Holdpoint graph.

The seed simulates a pause with a plain `InterruptRequest` object; here the
`review` node calls `interrupt()`, the thread really pauses (its events are
in the store), and `Command(resume=decision)` continues it. The program
prints the seed's three stages and ends in the seed's final state.

Run it with `python examples/content_review.py [approved|changes_requested]`.
"""

import sys
from typing import TypedDict

from domain.checkpoint.memory import InMemorySaver
from domain.graph import END, START, StateGraph
from domain.types import Command, interrupt

DRAFT = "Draft: This is the generated content that requires review."


class ReviewState(TypedDict):
    content: str
    approval: str
    status: str


def generate_content(state: ReviewState):
    return {"content": DRAFT, "status": "needs_review"}


def resume_workflow(approval: str) -> dict:
    """The seed's reconciliation of the reviewer's decision, as a state update."""
    if approval.lower() in ("approved", "approve", "yes"):
        return {"approval": approval, "status": "approved"}
    return {"approval": approval, "status": "changes_requested"}


def request_review(state: ReviewState):
    approval = interrupt(
        {"content": state["content"], "reason": "Please approve or request changes."},
        # what approve and reject resume with (the API's default: true and false)
        decision_values={"approve": "approved", "reject": "changes_requested"},
        # the inbox titles it with the draft, and may approve or reject drafts in bulk
        title="{content}",
        bulk=True,
    )
    return resume_workflow(approval)


builder = StateGraph(ReviewState)
builder.add_node("generate", generate_content)
builder.add_node("review", request_review)
builder.add_edge(START, "generate")
builder.add_edge("generate", "review")
builder.add_edge("review", END)
graph = builder.compile(checkpointer=InMemorySaver(), name="content_review")


def main(decision: str = "approved", thread_id: str = "content-review-1") -> dict:
    config = {"configurable": {"thread_id": thread_id}}

    # Step 1: generate content; the graph pauses at the review node.
    result = graph.invoke({"content": "", "approval": "", "status": "started"}, config)
    print("After generation:", graph.get_state(config).values)

    # Step 2: the interrupt's payload is what the human reviewer sees.
    print("Interrupt payload:", result["__interrupt__"][0].value)

    # Step 3: a named reviewer answers; the review node runs again with the answer.
    approving = decision.lower() in ("approved", "approve", "yes")
    reviewer = {
        "thread_id": thread_id,
        "actor": {"id": "rita", "role": "reviewer"},
        "decision": "approve" if approving else "reject",
        "reason": "Checked against the style guide.",
    }
    answer = "approved" if approving else "changes_requested"
    state = graph.invoke(Command(resume=answer), {"configurable": reviewer})
    print("After resume:", state)
    return state


if __name__ == "__main__":
    main(*sys.argv[1:2])
