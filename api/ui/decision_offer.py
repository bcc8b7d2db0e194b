"""What the decision page offers an open interrupt's viewer, and why it offers no more.

The viewer's own standing comes first (`api.ui.decidable.refusal`: role, the key's
scope, separation of duties, four eyes, a suspended graph): refused, they see no
decision form at all, and the sentence why. Then the interrupt itself limits the
kinds of decision: one that needs several approvals takes approve or reject only, and a
review of an agent's tool calls takes, per action, what its configuration allows
(`domain.oversight.reviews`). Each kind left out is named with its reason, so that the
page explains what it does not show. The decision is checked again as it is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.http.auth import Permission
from api.ui.access import Viewer
from api.ui.decidable import Refusal
from domain.oversight.hold_points import deciding_role, review_in

KINDS = ("approve", "reject", "edit", "respond", "escalate")
LABELS = {
    "approve": "Approve",
    "reject": "Reject",
    "edit": "Approve with edits",
    "respond": "Respond",
    "escalate": "Escalate",
}
PER_ACTION = "a review of tool calls is answered action by action, as the agent's middleware takes"


@dataclass(frozen=True)
class Offer:
    """The decisions offered (`kinds`), those left out with why (`absent`), the review of
    tool calls if it is one, the viewer's refusal if any, and whether they may cancel."""

    kinds: tuple[str, ...] = ()
    absent: tuple[tuple[str, str], ...] = ()
    review: dict[str, Any] | None = None
    refusal: Refusal | None = None
    may_cancel: bool = False
    quick: tuple[str, ...] = ()  # the decisions one button makes (for a review: every action's)

    def absent_by_reason(self) -> list[tuple[str, list[str]]]:
        """The kinds left out, grouped by why: [(why, [their labels])]."""
        grouped: dict[str, list[str]] = {}
        for kind, why in self.absent:
            grouped.setdefault(why, []).append(LABELS[kind])
        return list(grouped.items())


def who_may_decide(record: dict[str, Any]) -> str:
    """Who may decide, in words: "reviewer or admin", or "admin" alone (not "admin (or
    admin)")."""
    role = deciding_role(record)
    return "admin" if role == "admin" else f"{role} or admin"


def decision_kinds(record: dict[str, Any]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The kinds of decision the interrupt takes, and each other kind with why it does not."""
    needed = record.get("approvals") or 1
    if needed > 1:
        why = (
            f"this interrupt needs {needed} approvals by different principals: "
            "each of them approves or rejects"
        )
        both = ("approve", "reject")
        return both, tuple((k, why) for k in KINDS if k not in both)
    review = review_in(record)
    if review is None:
        return KINDS, ()
    allowed = {kind for action in review["actions"] for kind in action["allowed"]}
    kinds = tuple(k for k in KINDS if k in allowed)
    absent = tuple(
        (k, PER_ACTION if k == "escalate" else "no action of this review allows it")
        for k in KINDS
        if k not in allowed
    )
    return kinds, absent


def offer(record: dict[str, Any], viewer: Viewer, refusal: Refusal | None) -> Offer:
    """What the page offers `viewer` for the open interrupt `record`."""
    may_cancel = viewer.may(Permission.CANCEL)
    if refusal is not None:
        return Offer(refusal=refusal, may_cancel=may_cancel)
    kinds, absent = decision_kinds(record)
    review = review_in(record)
    quick = tuple(k for k in kinds if k in ("approve", "reject", "escalate"))
    if review is not None:
        quick = tuple(k for k in quick if all(k in a["allowed"] for a in review["actions"]))
    return Offer(kinds, absent, review, None, may_cancel, quick)
