"""Reviews of an agent's proposed actions: the interrupts LangChain's agents raise.

An agent's tool calls are put to a human in one of three shapes, read here off the
interrupt's payload (JSON) so that every part of Holdpoint treats them alike:

- `batched`: LangChain's `HumanInTheLoopMiddleware` (its default): one interrupt per model
  turn, `{"action_requests": [{"name", "args", "description"}], "review_configs":
  [{"action_name", "allowed_decisions"}]}`, answered `{"decisions": [decision, ...]}`;
- `per_call`: the same middleware with `interrupt_mode="per_call"`: one interrupt per tool
  call, `{"type": "tool_approval", "tool_call_id", "name", "args", "description"}`, its
  allowed decisions in the interrupt's response schema, answered with one decision;
- `inbox`: Agent Inbox's `HumanInterrupt`: `[{"action_request": {"action", "args"},
  "config": {"allow_accept", "allow_edit", "allow_respond", "allow_ignore"},
  "description"}]`, answered `[{"type": "accept" | "edit" | "response" | "ignore",
  "args"}]`.

A decision is one of Holdpoint's kinds (approve, edit, reject, respond) for every action
of the review; the middleware's own decision (`{"type": "approve"}`, `{"type": "edit",
"edited_action": {"name", "args"}}`, `{"type": "reject", "message"}`, `{"type":
"respond", "message"}`) is what the graph resumes with (`review_answer`). A kind an
action does not allow is refused (`ReviewDecisionError`).
"""

from __future__ import annotations

from typing import Any

from domain.errors import InvalidUpdateError

KINDS = ("approve", "edit", "reject", "respond")
INBOX_TYPES = {"approve": "accept", "edit": "edit", "reject": "ignore", "respond": "response"}
INBOX_KINDS = {value: key for key, value in INBOX_TYPES.items()}
INBOX_FLAGS = {"approve": "allow_accept", "edit": "allow_edit", "reject": "allow_ignore",
               "respond": "allow_respond"}  # fmt: skip


class ReviewDecisionError(InvalidUpdateError):
    """A decision a reviewed action does not allow, or an answer that is not one."""


def review_of(payload: Any, response_schema: Any = None) -> dict[str, Any] | None:
    """The review an interrupt's payload asks for: {"shape", "actions": [{"name", "args",
    "description", "allowed"}]}; None for any other question."""
    if isinstance(payload, dict) and isinstance(payload.get("action_requests"), list):
        configs = payload.get("review_configs") or []
        actions = []
        for index, request in enumerate(payload["action_requests"]):
            if not isinstance(request, dict):
                return None
            config = _config_for(configs, index, request.get("name"))
            actions.append(_action(request, config.get("allowed_decisions") or list(KINDS)))
        return {"shape": "batched", "actions": actions}
    if isinstance(payload, dict) and payload.get("type") == "tool_approval":
        return {"shape": "per_call", "actions": [_action(payload, _allowed_in(response_schema))]}
    if isinstance(payload, list) and payload and all(_is_inbox(item) for item in payload):
        actions = [
            {
                "name": item["action_request"].get("action"),
                "args": item["action_request"].get("args"),
                "description": item.get("description"),
                "allowed": [k for k, flag in INBOX_FLAGS.items() if item["config"].get(flag)],
            }
            for item in payload
        ]
        return {"shape": "inbox", "actions": actions}
    return None


def _action(request: dict[str, Any], allowed: list[str]) -> dict[str, Any]:
    return {
        "name": request.get("name"),
        "args": request.get("args"),
        "description": request.get("description"),
        "allowed": [kind for kind in allowed if kind in KINDS],
    }


def _config_for(configs: list[Any], index: int, name: Any) -> dict[str, Any]:
    """The review config of the `index`th action: the one at its index if it names it (the
    middleware makes one per action, in order), else the first naming its tool."""
    at: Any = configs[index] if index < len(configs) else None
    if isinstance(at, dict) and at.get("action_name") == name:
        return at
    named = [c for c in configs if isinstance(c, dict) and c.get("action_name") == name]
    return dict(named[0]) if named else {}


def _is_inbox(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("action_request"), dict)
        and isinstance(item.get("config"), dict)
    )


def _allowed_in(schema: Any) -> list[str]:
    """The decisions a per-call response schema allows (the `type` constants of its
    branches); every kind when it says nothing readable."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            kind = node.get("properties", {}).get("type") if "properties" in node else None
            if isinstance(kind, dict):
                const = kind.get("const") or (kind.get("enum") or [None])[0]
                if isinstance(const, str) and const not in found:
                    found.append(const)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found or list(KINDS)


# -- answering ------------------------------------------------------------------


def review_answer(review: dict[str, Any], decision: str, resume: Any, reason: str | None) -> Any:
    """What the graph resumes with for a decision on a review: the response given in the
    middleware's own shape (checked), or one built from the decision: approve every
    action; reject each (the reason as its message); edit (`resume` the edited action,
    `{"name", "args"}` or its args alone, or a list of them, one per action); respond
    (`resume` the message, or the reason)."""
    if _is_response(review, resume):
        kinds = decision_kinds(review, resume)
        _check_allowed(review, kinds)
        return resume
    actions = review["actions"]
    if decision not in KINDS:
        msg = f"A review of tool calls takes approve, edit, reject or respond, not {decision!r}"
        raise ReviewDecisionError(msg)
    _check_allowed(review, [decision] * len(actions))
    edits = _edits(actions, resume) if decision == "edit" else [None] * len(actions)
    message = resume if decision == "respond" and isinstance(resume, str) else reason
    if decision == "respond" and not message:
        msg = "A respond decision needs the message the agent gets: give it as `resume`"
        raise ReviewDecisionError(msg)
    return review_response(review, [(decision, edit, message) for edit in edits])


def review_response(
    review: dict[str, Any], chosen: list[tuple[str, dict[str, Any] | None, str | None]]
) -> Any:
    """The middleware's own answer to the review, one decision per action, each given as
    (its kind, an edit's action `{"name", "args"}`, a reject's or respond's message)."""
    built = [_decision(review["shape"], kind, edit, message) for kind, edit, message in chosen]
    if review["shape"] == "batched":
        return {"decisions": built}
    return built[0] if review["shape"] == "per_call" else built


def _decision(shape: str, kind: str, edit: dict[str, Any] | None, message: str | None) -> Any:
    if shape == "inbox":
        args: Any = None
        if kind == "edit" and edit is not None:
            args = {"action": edit["name"], "args": edit["args"]}
        elif kind == "respond":
            args = message
        return {"type": INBOX_TYPES[kind], "args": args}
    body: dict[str, Any] = {"type": kind}
    if kind == "edit":
        body["edited_action"] = edit
    elif kind in ("reject", "respond") and message:
        body["message"] = message
    return body


def _edits(actions: list[dict[str, Any]], resume: Any) -> list[dict[str, Any]]:
    given = resume if isinstance(resume, list) else [resume]
    if len(given) != len(actions):
        msg = f"An edit gives one edited action per action reviewed ({len(actions)})"
        raise ReviewDecisionError(msg)
    edits = []
    for action, item in zip(actions, given, strict=True):
        edit = item["edited_action"] if isinstance(item, dict) and "edited_action" in item else item
        if not isinstance(edit, dict):
            msg = 'An edit\'s `resume` is the edited action: {"name", "args"}, or its args'
            raise ReviewDecisionError(msg)
        if "args" in edit:
            edits.append({"name": edit.get("name") or action["name"], "args": edit["args"]})
        else:
            edits.append({"name": action["name"], "args": edit})
    return edits


def _is_response(review: dict[str, Any], resume: Any) -> bool:
    """Whether `resume` is already the middleware's own answer to the review."""
    shape = review["shape"]
    if shape == "batched":
        return isinstance(resume, dict) and isinstance(resume.get("decisions"), list)
    if shape == "per_call":
        return isinstance(resume, dict) and resume.get("type") in KINDS
    return isinstance(resume, list) and all(
        isinstance(r, dict) and r.get("type") in INBOX_KINDS for r in resume
    )


def decision_kinds(review: dict[str, Any], resume: Any) -> list[str]:
    """The kind of each action's decision in an answer to the review."""
    shape = review["shape"]
    if shape == "batched":
        items = resume.get("decisions") if isinstance(resume, dict) else None
    elif shape == "per_call":
        items = [resume]
    else:
        items = resume
    if not isinstance(items, list) or len(items) != len(review["actions"]):
        msg = f"The answer must decide each of the {len(review['actions'])} action(s) reviewed"
        raise ReviewDecisionError(msg)
    kinds = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        kind = INBOX_KINDS.get(str(kind)) if shape == "inbox" else kind
        if kind not in KINDS:
            msg = f"Each decision's type must be one of {', '.join(KINDS)}: not {item!r}"
            raise ReviewDecisionError(msg)
        kinds.append(str(kind))
    return kinds


def _check_allowed(review: dict[str, Any], kinds: list[str]) -> None:
    for action, kind in zip(review["actions"], kinds, strict=True):
        if kind not in action["allowed"]:
            msg = (
                f"Decision {kind!r} is not allowed for action {action['name']!r}: it allows "
                f"{', '.join(action['allowed'])}"
            )
            raise ReviewDecisionError(msg)


def check_review_answer(review: dict[str, Any], decision: str, resume: Any) -> None:
    """An answer to a review that the hold points take: each action decided as it allows,
    and an approve or reject that approves or rejects every action."""
    kinds = decision_kinds(review, resume)
    _check_allowed(review, kinds)
    if decision in ("approve", "reject") and set(kinds) != {decision}:
        msg = f"A {decision} decides every action {decision}; this answer decides {kinds}"
        raise ReviewDecisionError(msg)


def review_outcome(review: dict[str, Any], resume: Any) -> list[dict[str, Any]]:
    """What an answer decided of each action: its tool and the arguments it proposed, the
    decision, and an edit's arguments or a reject's or respond's message (the record
    of a review, for the timeline and the report); [] if it is no answer to the review."""
    try:
        kinds = decision_kinds(review, resume)
    except ReviewDecisionError:
        return []
    shape = review["shape"]
    items = (
        resume["decisions"] if shape == "batched" else [resume] if shape == "per_call" else resume
    )
    outcome = []
    for action, kind, item in zip(review["actions"], kinds, items, strict=True):
        edited, message = None, None
        if shape == "inbox":
            args = item.get("args")
            edited = args.get("args") if kind == "edit" and isinstance(args, dict) else None
            message = args if kind == "respond" else None
        else:
            edited = (item.get("edited_action") or {}).get("args") if kind == "edit" else None
            message = item.get("message")
        outcome.append(
            {
                "name": action["name"],
                "args": action["args"],
                "decision": kind,
                "edited_args": edited,
                "message": message,
            }
        )
    return outcome
