"""`[server.notifications]` of a holdpoint.toml: the targets, the hosts they may reach,
and how deliveries are retried.

    [server.notifications]
    allow_hosts = ["hooks.example.com", "*.slack.com"]
    allow_private_networks = false     # loopback and private addresses refused
    run_webhook_secret_env = "HOLDPOINT_RUN_WEBHOOK_SECRET"   # signs runs' webhooks

    [[server.notifications.targets]]
    name = "ops"
    url = "https://hooks.example.com/holdpoint"
    kind = "webhook"                   # or "slack" (an incoming webhook's payload)
    secret_env = "HOLDPOINT_OPS_SECRET"  # HMAC-SHA256 key; read from the environment
    events = ["interrupt.raised", "interrupt.decided"]   # default: all of EVENTS

A secret is never written in the file: it is named by the environment variable that
holds it, and a webhook target without one is refused (its receiver could not tell
Holdpoint's deliveries from anyone's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

EVENTS = (
    "interrupt.raised",
    "interrupt.assigned",
    "interrupt.near_deadline",
    "interrupt.breached",
    "interrupt.decided",
)
KINDS = ("webhook", "slack")


@dataclass(frozen=True)
class Target:
    """Where notifications go, of which events, signed with which key."""

    name: str
    url: str
    kind: str = "webhook"
    events: tuple[str, ...] = EVENTS
    secret: str | None = None

    def wants(self, event: str) -> bool:
        return event in self.events


@dataclass(frozen=True)
class Notifications:
    targets: tuple[Target, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    allow_private_networks: bool = False
    run_webhook_secret: str | None = None
    max_attempts: int = 8
    first_retry_seconds: float = 1.0
    max_retry_seconds: float = 300.0
    near_deadline_seconds: float = 300.0
    timeout_seconds: float = 10.0
    poll_seconds: float = 1.0

    def retry_delay(self, attempts: int) -> float:
        """Seconds before the next attempt, after `attempts` failed ones: doubling."""
        return float(min(self.first_retry_seconds * 2 ** (attempts - 1), self.max_retry_seconds))


NUMBERS = (
    "max_attempts",
    "first_retry_seconds",
    "max_retry_seconds",
    "near_deadline_seconds",
    "timeout_seconds",
    "poll_seconds",
)


def notifications(table: Any) -> Notifications:
    """The `[server.notifications]` table, checked; ValueError naming what is wrong."""
    if isinstance(table, Notifications):
        return table
    if not isinstance(table, dict):
        raise ValueError("notifications must be a table")
    known = {f.name for f in fields(Notifications)} - {"targets", "run_webhook_secret"}
    allowed = known | {"targets", "run_webhook_secret_env"}
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(f"notifications: unknown setting {unknown[0]!r}")
    values: dict[str, Any] = {}
    hosts = table.get("allow_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise ValueError("notifications.allow_hosts must be a list of host names")
    values["allow_hosts"] = tuple(host.lower() for host in hosts)
    private = table.get("allow_private_networks", False)
    if not isinstance(private, bool):
        raise ValueError("notifications.allow_private_networks must be true or false")
    values["allow_private_networks"] = private
    for name in NUMBERS:
        if name in table:
            value = table[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"notifications.{name} must be a number above 0: {value!r}")
            values[name] = int(value) if name == "max_attempts" else float(value)
    if "run_webhook_secret_env" in table:
        values["run_webhook_secret"] = _secret(table["run_webhook_secret_env"], "run webhooks")
    targets = table.get("targets", [])
    if not isinstance(targets, list):
        raise ValueError("notifications.targets must be a list of tables ([[...targets]])")
    values["targets"] = tuple(_target(entry) for entry in targets)
    names = [target.name for target in values["targets"]]
    if len(set(names)) != len(names):
        raise ValueError("notifications.targets: each target needs a name of its own")
    return Notifications(**values)


def _target(entry: Any) -> Target:
    if not isinstance(entry, dict):
        raise ValueError("each notifications.targets entry must be a table")
    unknown = sorted(set(entry) - {"name", "url", "kind", "events", "secret_env"})
    if unknown:
        raise ValueError(f"notifications target: unknown setting {unknown[0]!r}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("each notifications target needs a name")
    url = entry.get("url")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"notifications target {name!r}: url must be http(s)://host/...")
    kind = entry.get("kind", "webhook")
    if kind not in KINDS:
        raise ValueError(f"notifications target {name!r}: kind must be one of {', '.join(KINDS)}")
    events = entry.get("events", list(EVENTS))
    if not isinstance(events, list) or not events or not set(events) <= set(EVENTS):
        known = ", ".join(EVENTS)
        raise ValueError(f"notifications target {name!r}: events must be some of {known}")
    secret = None
    if "secret_env" in entry:
        secret = _secret(entry["secret_env"], f"target {name!r}")
    elif kind == "webhook":
        msg = (
            f"notifications target {name!r}: a webhook needs secret_env, the environment "
            "variable with its HMAC-SHA256 key (its receiver checks each delivery with it)"
        )
        raise ValueError(msg)
    return Target(name, str(url), kind, tuple(events), secret)


def _secret(variable: Any, what: str) -> str:
    if not isinstance(variable, str) or not variable:
        raise ValueError(f"notifications: the secret of {what} is named by an environment variable")
    secret = os.environ.get(variable, "")
    if len(secret) < 16:
        msg = f"notifications: {variable} (the secret of {what}) must hold 16 characters or more"
        raise ValueError(msg)
    return secret
