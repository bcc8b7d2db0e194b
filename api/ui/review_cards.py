"""A review of an agent's tool calls as cards, one per action, and the answer they make.

LangChain's `HumanInTheLoopMiddleware` (batched or per call) and Agent Inbox's
`HumanInterrupt` put each proposed tool call to a human with the decisions it allows
(`domain.oversight.reviews`). Each card shows the tool, its arguments (as fields to
edit where the call allows an edit) and those decisions only; the posted cards become
the middleware's own answer (`reviews.review_response`), which the decision use case
checks against what each action allows, as it does the API's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api.http.problems import Problem
from api.ui.schema_form import EditForm, SchemaFormError, value_form, value_of
from domain.oversight.reviews import review_response

CARD_LABELS = {
    "approve": "Approve",
    "edit": "Edit the arguments",
    "reject": "Reject",
    "respond": "Respond",
}


@dataclass(frozen=True)
class Card:
    """One action of the review: its index, tool, arguments, description, the decisions
    it allows, and its arguments as fields when it allows an edit."""

    index: int
    name: str
    args: Any
    description: str | None
    allowed: tuple[str, ...]
    args_form: EditForm | None

    @property
    def field(self) -> str:
        """The prefix of its form fields."""
        return f"action/{self.index}"


def cards(review: dict[str, Any]) -> list[Card]:
    return [
        Card(
            index,
            str(action["name"]),
            action["args"],
            action.get("description"),
            tuple(action["allowed"]),
            value_form(action["args"], f"action/{index}/args", "Arguments")
            if "edit" in action["allowed"]
            else None,
        )
        for index, action in enumerate(review["actions"])
    ]


def overall(kinds: list[str]) -> str:
    """The decision a set of per-action decisions is recorded as: their kind when they
    agree; otherwise an edit (a mixed answer approves nothing as a whole)."""
    return kinds[0] if len(set(kinds)) == 1 else "edit"


def answer_of(review: dict[str, Any], form: dict[str, str]) -> tuple[str, Any]:
    """The decision and the middleware's answer the posted cards make; 422 naming each
    card that is not decided, or decided in a way it does not allow."""
    chosen: list[tuple[str, dict[str, Any] | None, str | None]] = []
    problems: list[str] = []
    for card in cards(review):
        kind = form.get(f"{card.field}/decision", "")
        message = form.get(f"{card.field}/message", "").strip() or None
        if kind not in card.allowed:
            problems.append(f"{card.name}: choose {' or '.join(card.allowed)}")
            continue
        edit = None
        if kind == "edit" and card.args_form is not None:
            try:
                edit = {"name": card.name, "args": value_of(form, card.args_form)}
            except SchemaFormError as error:
                problems.append(f"{card.name}: {error}")
                continue
        if kind == "respond" and message is None:
            problems.append(f"{card.name}: write the response the agent gets")
            continue
        chosen.append((kind, edit, message))
    if problems:
        msg = f"The decisions were not recorded: {'; '.join(problems)}"
        raise Problem(422, msg)
    return overall([kind for kind, _, _ in chosen]), review_response(review, chosen)
