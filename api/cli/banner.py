"""What `holdpoint serve` prints at start: where it is, and on a first start where the keys
are (and, on a terminal only, the keys)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from domain.record.store import redacted
from service.bootstrap_keys import ROLE_HINTS, VARIABLES, key_variable
from service.settings import ServerSettings

JSON = "-H 'content-type: application/json'"


def _pick(path: str) -> str:
    """A pipe's end that prints one field of the JSON it is given (python3: always there)."""
    return f"python3 -c 'import json,sys; print(json.load(sys.stdin){path})'"


def banner(
    settings: ServerSettings,
    graphs: list[str],
    keys: list[tuple[Any, str]],
    keys_file: Path,
    *,
    on_terminal: bool,
) -> str:
    """The banner. Keys made at this start are shown only `on_terminal`: standard output
    may be a log (a container's), and no key goes to a log; the file's path always is."""
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
        make = "`holdpoint keys create --principal ID --role agent|reviewer|auditor|admin`"
        if keys_file.is_file():
            lines.append(f"API keys: the first start's are in {keys_file}; more with {make}")
        else:
            lines.append(f"API keys: {make}")
        return "\n".join(lines)
    lines += [
        "First start: three API keys were made, written to the file (readable by its owner",
        "only; the store keeps only their hashes, so it is their only copy):",
        f"  keys file: {keys_file}",
    ]
    if on_terminal:
        for info, raw in keys:
            lines.append(f"  {info.role:<9} {raw}   ({ROLE_HINTS.get(info.role, info.role)})")
    else:
        lines.append("  (not shown here: standard output is not a terminal)")
    lines.append("More with `holdpoint keys create --principal ID --role ROLE`.")
    roles = {info.role: raw for info, raw in keys}
    if "refund" in graphs and {"agent", "reviewer", "auditor"} <= set(roles):
        if on_terminal:
            keys_set = [
                f"export AGENT={roles['agent']}",
                f"export REVIEWER={roles['reviewer']} AUDITOR={roles['auditor']}",
            ]
        else:
            keys_set = [
                f". {shlex.quote(str(keys_file))}",
                " ".join(f"{role.upper()}=${key_variable(role)}" for role in VARIABLES),
            ]
        lines += ["", *refund_story(url, keys_set)]
    return "\n".join(lines)


def refund_story(url: str, keys_set: list[str]) -> list[str]:
    """The refund story as shell lines: `keys_set` sets AGENT, REVIEWER and AUDITOR; then
    start, pause, decide, wait for the run the decision began, see it done and audited."""
    return [
        "The refund story: an agent asks for a $250 refund, a reviewer approves it.",
        f"  export URL={url}",
        *(f"  {line}" for line in keys_set),
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
