"""`holdpoint erase --subject ID`: erase a data subject's personal data by destroying its key.

Run it as the role that owns the tables (it deletes the key, the subject's
snapshots and rebuilds the read models). It prints the erasure report: each place
the subject's plaintext could be, and what was found there before and after.
"""

from __future__ import annotations

import argparse
import json

from api.cli.options import Commands, add_json_option
from domain.access.actor import local_actor
from domain.record.store import open_store


def register(commands: Commands) -> None:
    """Add `erase` to the `holdpoint` subcommands."""
    erase = commands.add_parser(
        "erase",
        help="erase a data subject's personal data (crypto-shredding), with a report",
        description=(
            "Destroys the data subject's key, so their values sealed in the events read "
            "as [erased] (the hashes, seals and bundles, taken over the ciphertext, still "
            "verify), records SubjectErased, rebuilds the read models, deletes the "
            "subject's snapshots, clears their plaintext from any other table, compacts "
            "the database, and reports what each place held afterwards. Refused while a "
            "legal hold covers one of the subject's threads. Run as the tables' owner."
        ),
    )
    erase.add_argument("--subject", required=True, help="the data subject's id, as recorded")
    erase.add_argument("--reason", help="why (recorded; default: the subject's request)")
    add_json_option(erase)
    erase.set_defaults(handler=_erase)


def _erase(args: argparse.Namespace) -> int:
    from service.erasure import erase  # noqa: PLC0415

    say = None if args.json else print
    with open_store(existing=True) as store:
        report = erase(store, args.subject, local_actor(), args.reason, say)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0 if report.clean else 1
    print(
        f"Erased subject {report.subject_ref[:16]}: {report.values} sealed value(s) in "
        f"{len(report.threads)} thread(s) now read as [erased]; key "
        f"{report.key_id or '(none kept)'} {'destroyed' if report.key_destroyed else 'absent'}; "
        f"recorded at position {report.position}."
    )
    print(f"Erasure report ({report.searched} text(s) searched for):")
    for place in report.places:
        print(
            f"  {place.name} ({place.kind}): {place.before} before, {place.after} after: "
            f"{place.action}"
        )
    print("Nothing of the subject's plaintext remains." if report.clean else "NOT CLEAN.")
    return 0 if report.clean else 1
