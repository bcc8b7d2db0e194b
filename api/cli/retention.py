"""`holdpoint retention|hold|incident`: the record's life, from the command line.

Policies, holds, purges and incidents are recorded with the operator who ran
the command as their actor (the local OS user, see `domain.access.actor`).
A purge and an incident seal the log, so they need the seal key
(HOLDPOINT_SEAL_KEY); `retention apply --dry-run` does not. The retention floor
is the highest of 183 days (EU AI Act Art. 19 and 26(6)), the servers' `[retention]
floor_days` as their oversight policy on record says, and that of the holdpoint.toml
given with --config; a purge never lets a thread go before it, whatever a policy
adopted under a lower floor says.
"""

from __future__ import annotations

import argparse
import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from api.cli.options import Commands, UsageError, add_json_option
from domain.access.actor import local_actor
from domain.record.store import open_store
from domain.retention.policy import CLOCKS, DEFAULT_FLOOR_DAYS, OUTCOMES

SCOPE_HELP = "all, graph:ID, metadata:KEY or metadata:KEY=VALUE"
HOLD_SCOPE_HELP = "thread:ID, graph:ID, metadata:KEY or metadata:KEY=VALUE"


def register(commands: Commands) -> None:
    """Add `retention`, `hold` and `incident` to the `holdpoint` subcommands."""
    _register_retention(commands)
    _register_holds(commands)
    _register_incidents(commands)


def _register_retention(commands: Commands) -> None:
    retention = commands.add_parser(
        "retention",
        help="retention policies, and purging what they let go",
        description=(
            "A policy covers a scope, counts from a thread's start or end, and lets its "
            "outcomes (completed, failed, cancelled) go after a period of days, never under "
            "the floor. A thread with a pending interrupt or under a legal hold is never "
            "purged; where several policies cover a thread, the longest keeps it."
        ),
    )
    sub = retention.add_subparsers(dest="retention_command", required=True, metavar="COMMAND")
    adopt = sub.add_parser("set", help="adopt a policy, or change the one of that name")
    adopt.add_argument("name", help="the policy's name (letters, digits, - and _)")
    adopt.add_argument("--scope", required=True, help=f"what it covers: {SCOPE_HELP}")
    adopt.add_argument("--clock", choices=CLOCKS, default="end", help="count from (default end)")
    adopt.add_argument("--days", type=int, required=True, help="the period, in days")
    adopt.add_argument(
        "--outcomes",
        default=",".join(OUTCOMES),
        help=f"the outcomes it lets go, comma-separated (default {','.join(OUTCOMES)})",
    )
    adopt.add_argument("--reason", required=True, help="why (recorded)")
    adopt.add_argument("--config", metavar="FILE", help="a holdpoint.toml: its [retention] floor")
    adopt.set_defaults(handler=_set_policy)
    retire = sub.add_parser("retire", help="retire a policy: it lets nothing go any more")
    retire.add_argument("name")
    retire.add_argument("--reason", required=True, help="why (recorded)")
    retire.set_defaults(handler=_retire_policy)
    listing = sub.add_parser("list", help="the policies in force, the holds and the purges")
    add_json_option(listing)
    listing.set_defaults(handler=_list_retention)
    apply = sub.add_parser(
        "apply",
        help="purge what is due, as one recorded, sealed operation",
        description=(
            "Seals the log, records ThreadsPurged (each thread's head hash, the policies, "
            "when it was due, each event's position and Merkle leaf), deletes the threads' "
            "events and snapshots through the store's purge function (the owner's: run it "
            "as the role that owns the tables), updates the read models and seals again. "
            "`holdpoint verify` then accounts for the purged positions by that record."
        ),
    )
    apply.add_argument("--dry-run", action="store_true", help="list what is due; change nothing")
    add_json_option(apply)
    apply.set_defaults(handler=_apply)


def _register_holds(commands: Commands) -> None:
    hold = commands.add_parser(
        "hold",
        help="legal holds: what no purge may remove",
        description="A held thread is never purged. Placing and lifting are recorded.",
    )
    sub = hold.add_subparsers(dest="hold_command", required=True, metavar="COMMAND")
    place = sub.add_parser("place", help="place a hold; prints its id")
    place.add_argument("--scope", required=True, help=f"what it holds: {HOLD_SCOPE_HELP}")
    place.add_argument("--reason", required=True, help="why (recorded)")
    place.set_defaults(handler=_place_hold)
    lift = sub.add_parser("lift", help="lift a hold")
    lift.add_argument("hold_id", help="as `hold list` shows it, e.g. hold-3")
    lift.add_argument("--reason", required=True, help="why (recorded)")
    lift.set_defaults(handler=_lift_hold)
    listing = sub.add_parser("list", help="the holds in place")
    add_json_option(listing)
    listing.set_defaults(handler=_list_holds)


def _register_incidents(commands: Commands) -> None:
    incident = commands.add_parser(
        "incident",
        help="freeze and hand over the evidence of an incident (Art. 26(5), 73)",
        description=(
            "`open` seals the log, writes each thread's signed evidence bundle to --out, "
            "places a legal hold on each thread and records the incident; `close` records "
            "its outcome. The oversight report lists incidents."
        ),
    )
    sub = incident.add_subparsers(dest="incident_command", required=True, metavar="COMMAND")
    opening = sub.add_parser("open", help="open an incident on threads")
    opening.add_argument("--thread", action="append", required=True, help="a thread (repeatable)")
    opening.add_argument("--reason", required=True, help="what happened (recorded)")
    opening.add_argument("--out", required=True, metavar="DIR", help="a new folder for bundles")
    add_json_option(opening)
    opening.set_defaults(handler=_open_incident)
    closing = sub.add_parser("close", help="close an incident with its outcome")
    closing.add_argument("incident_id", help="e.g. incident-2")
    closing.add_argument("--outcome", required=True, help="how it ended (recorded)")
    closing.set_defaults(handler=_close_incident)
    listing = sub.add_parser("list", help="every incident, open or closed")
    add_json_option(listing)
    listing.set_defaults(handler=_list_incidents)


# -- policies --------------------------------------------------------------------------


def floor_days(config: str | None) -> int:
    """`[retention] floor_days` of the holdpoint.toml `config`, or the default."""
    if config is None:
        return DEFAULT_FLOOR_DAYS
    try:
        table = tomllib.loads(Path(config).read_text(encoding="utf-8")).get("retention", {})
    except OSError as error:
        raise UsageError(f"cannot read {config}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{config} is not valid toml: {error}") from None
    floor = table.get("floor_days", DEFAULT_FLOOR_DAYS)
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < DEFAULT_FLOOR_DAYS:
        msg = (
            f"{config}: [retention] floor_days must be a whole number of days, at least "
            f"{DEFAULT_FLOOR_DAYS} (got {floor!r})"
        )
        raise UsageError(msg)
    return floor


def _set_policy(args: argparse.Namespace) -> int:
    from domain.retention.policy import RetentionPolicy  # noqa: PLC0415
    from domain.retention.retention import Retention  # noqa: PLC0415
    from service.retention import floor_in_force  # noqa: PLC0415

    outcomes = [o.strip() for o in args.outcomes.split(",") if o.strip()]
    with open_store() as store:
        floor = floor_in_force(store, floor_days(args.config))
        policy = RetentionPolicy.checked(
            args.name, args.scope, args.clock, args.days, outcomes, floor_days=floor
        )
        Retention(store).set_policy(policy, local_actor(), args.reason)
    print(f"Policy {policy.name!r} in force: {_policy_text(policy.to_json())}.")
    return 0


def _retire_policy(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        Retention(store).retire_policy(args.name, local_actor(), args.reason)
    print(f"Policy {args.name!r} retired.")
    return 0


def _policy_text(policy: dict[str, Any]) -> str:
    from domain.retention.scope import Scope  # noqa: PLC0415

    scope = Scope.from_json(policy["scope"])
    return (
        f"{scope}, {', '.join(policy['outcomes'])} threads let go {policy['period_days']} days "
        f"after their {policy['clock']}"
    )


def _list_retention(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        retention = Retention(store)
        policies = [p.to_json() for p in retention.policies()]
        holds = retention.holds()
        purges = [_purge_json(p) for p in retention.purges()]
    if args.json:
        print(json.dumps({"policies": policies, "holds": holds, "purges": purges}, indent=2))
        return 0
    print(f"Policies in force: {len(policies) or 'none (every thread is kept)'}")
    for policy in policies:
        print(f"  {policy['name']}: {_policy_text(policy)}")
    _print_holds(holds)
    print(f"Purges: {len(purges) or 'none'}")
    for purge in purges:
        print(
            f"  {purge['operation']}: {len(purge['threads'])} thread(s) at {purge['at']} "
            f"by {purge['by']}, sealed first at position {purge['sealed_at']}"
        )
    return 0


def _purge_json(record: Any) -> dict[str, Any]:
    return {
        "operation": record.operation,
        "at": record.timestamp.isoformat(),
        "by": record.actor.get("id"),
        "sealed_at": record.sealed_at,
        "threads": [
            {k: v for k, v in thread.items() if k != "events"} | {"events": len(thread["events"])}
            for thread in record.threads
        ],
    }


# -- purges ----------------------------------------------------------------------------


def _apply(args: argparse.Namespace) -> int:
    from integrity.signing import load_private_key  # noqa: PLC0415
    from projections.catalog import runner_for  # noqa: PLC0415
    from service.retention import apply_purge, plan_purge  # noqa: PLC0415

    now = datetime.now(UTC)
    key = None if args.dry_run else load_private_key()
    with open_store(existing=True) as store:
        runner = runner_for(store)
        if key is None:
            plan, operation, deleted, seals = plan_purge(store, runner, now), None, 0, []
        else:
            outcome = apply_purge(store, runner, key, local_actor(), now, say=_say)
            plan, operation = outcome.plan, outcome.operation
            deleted, seals = outcome.deleted, outcome.seals
    due = [_due_json(item, now) for item in plan.due]
    kept = [_due_json(item, now) | {"kept_because": why} for item, why in plan.kept]
    if args.json:
        data = {
            "dry_run": args.dry_run,
            "operation": operation,
            "events_deleted": deleted,
            "seals": seals,
            "due": due,
            "kept": kept,
        }
        print(json.dumps(data, indent=2))
        return 0
    verb = "Would purge" if args.dry_run else "Purged"
    print(f"{verb} {len(due)} thread(s)" + (":" if due else "."))
    for item in due:
        print(
            f"  {item['thread_id']} ({item['graph_id']}, {item['status']}): due "
            f"{item['due_at']}, {item['days_after_due']} day(s) ago, by {item['policies']}"
        )
    for item in kept:
        print(f"  kept {item['thread_id']}: due {item['due_at']}, but {item['kept_because']}")
    if operation is not None:
        print(
            f"Recorded as purge {operation}: {deleted} event(s) deleted; sealed at positions "
            f"{seals[0]:,} (before) and {seals[1]:,} (after)."
        )
    return 0


def _due_json(item: Any, now: datetime) -> dict[str, Any]:
    return {
        "thread_id": item.thread.thread_id,
        "graph_id": item.thread.graph_id,
        "status": item.thread.status,
        "due_at": item.due_at.isoformat(),
        "days_after_due": (now - item.due_at).days,
        "policies": ", ".join(item.policies),
    }


def _say(line: str) -> None:
    import sys  # noqa: PLC0415

    print(line, file=sys.stderr)


# -- holds -----------------------------------------------------------------------------


def _place_hold(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store() as store:
        hold_id = Retention(store).place_hold(args.scope, local_actor(), args.reason)
    print(f"Placed {hold_id} on {args.scope}.")
    return 0


def _lift_hold(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        Retention(store).lift_hold(args.hold_id, local_actor(), args.reason)
    print(f"Lifted {args.hold_id}.")
    return 0


def _list_holds(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        holds = Retention(store).holds()
    if args.json:
        print(json.dumps(holds, indent=2))
    else:
        _print_holds(holds)
    return 0


def _print_holds(holds: list[dict[str, Any]]) -> None:
    from domain.retention.scope import Scope  # noqa: PLC0415

    print(f"Legal holds in place: {len(holds) or 'none'}")
    for hold in holds:
        print(
            f"  {hold['hold_id']}: {Scope.from_json(hold['scope'])}, by {hold['placed_by']} "
            f"at {hold['placed_at']}: {hold['reason']}"
        )


# -- incidents -------------------------------------------------------------------------


def _open_incident(args: argparse.Namespace) -> int:
    from integrity.signing import load_private_key  # noqa: PLC0415
    from service.incidents import open_incident  # noqa: PLC0415

    key = load_private_key()
    with open_store(existing=True) as store:
        incident = open_incident(
            store, key, args.thread, args.reason, local_actor(), Path(args.out)
        )
    if args.json:
        print(json.dumps(incident, indent=2))
        return 0
    print(
        f"Opened {incident['incident_id']} on {', '.join(incident['thread_ids'])}: sealed at "
        f"position {incident['sealed_at']:,}, held by {', '.join(incident['holds'])}."
    )
    for bundle in incident["bundles"]:
        print(f"  {args.out}/{bundle['file']}  sha256 {bundle['sha256']}")
    return 0


def _close_incident(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        Retention(store).close_incident(args.incident_id, args.outcome, local_actor())
    print(f"Closed {args.incident_id}. Its holds stay until lifted (`holdpoint hold lift`).")
    return 0


def _list_incidents(args: argparse.Namespace) -> int:
    from domain.retention.retention import Retention  # noqa: PLC0415

    with open_store(existing=True) as store:
        incidents = Retention(store).incidents()
    if args.json:
        print(json.dumps(incidents, indent=2))
        return 0
    print(f"Incidents: {len(incidents) or 'none'}")
    for incident in incidents:
        closed = incident["closed"]
        state = "open" if closed is None else f"closed ({closed['outcome']})"
        print(
            f"  {incident['incident_id']}: {', '.join(incident['thread_ids'])}, opened by "
            f"{incident['opened_by']} at {incident['opened_at']}: {incident['reason']}; {state}"
        )
    return 0
