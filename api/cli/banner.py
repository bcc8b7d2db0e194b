"""What `holdpoint serve` prints at start: where it is, and on a first start the keys."""

from __future__ import annotations

from typing import Any

from domain.record.store import redacted
from service.settings import ServerSettings

ROLE_HINTS = {
    "agent": "starts and runs threads",
    "reviewer": "decides interrupts",
    "auditor": "reads audit trails and reports",
}
JSON = "-H 'content-type: application/json'"


def _pick(path: str) -> str:
    """A pipe's end that prints one field of the JSON it is given (python3: always there)."""
    return f"python3 -c 'import json,sys; print(json.load(sys.stdin){path})'"


def banner(settings: ServerSettings, graphs: list[str], keys: list[tuple[Any, str]]) -> str:
    url = settings.base_url
    projector = "in this process" if settings.projector else "external (holdpoint projector)"
    lines = [
        f"Holdpoint serving {url} on {redacted(settings.store_url)}",
        f"  API docs:  {url}/docs",
        f"  browser:   {url}/ui  (sign in with a reviewer or auditor key)",
        f"  graphs:    {', '.join(graphs)}",
        f"  projector: {projector}",
        "",
    ]
    if not keys:
        lines.append(
            "API keys: `holdpoint keys create --principal ID --role agent|reviewer|auditor|admin`"
        )
        return "\n".join(lines)
    lines += [
        "First start: three API keys were made. They are shown this once (only their",
        "hashes are kept); more with `holdpoint keys create --principal ID --role ROLE`.",
    ]
    by_role = {}
    for info, raw in keys:
        by_role[info.role] = raw
        lines.append(f"  {info.role:<9} {raw}   ({ROLE_HINTS.get(info.role, info.role)})")
    if "refund" in graphs and {"agent", "reviewer", "auditor"} <= set(by_role):
        lines += ["", *refund_story(url, by_role)]
    return "\n".join(lines)


def refund_story(url: str, keys: dict[str, str]) -> list[str]:
    """The refund story as shell lines: start, pause, decide, wait for the run the decision
    began, then see the thread done and audited."""
    return [
        "The refund story: an agent asks for a $250 refund, a reviewer approves it.",
        f"  export URL={url} AGENT={keys['agent']}",
        f"  export REVIEWER={keys['reviewer']} AUDITOR={keys['auditor']}",
        f'  curl -s -X POST $URL/threads -H "x-api-key: $AGENT" {JSON} '
        '-d \'{"thread_id": "refund-1", "metadata": {"graph_id": "refund"}}\'',
        f'  ID=$(curl -s -X POST $URL/threads/refund-1/runs/wait -H "x-api-key: $AGENT" {JSON} '
        '-d \'{"assistant_id": "refund", "input": {"refund_amount": 250}}\' | '
        + _pick('["__interrupt__"][0]["id"]')
        + ")",
        '  curl -s $URL/approvals -H "x-api-key: $REVIEWER"',
        f'  RUN=$(curl -s -X POST $URL/approvals/$ID/decision -H "x-api-key: $REVIEWER" {JSON} '
        '-d \'{"decision": "approve", "reason": "Receipt checked"}\' | '
        + _pick('["run_id"]')
        + ")",
        '  curl -s $URL/threads/refund-1/runs/$RUN/join -H "x-api-key: $AGENT"',
        '  curl -s $URL/threads/refund-1/audit -H "x-api-key: $AUDITOR"',
    ]
