"""`holdpoint verify`, `holdpoint seal` and `holdpoint export`: the record's integrity.

Exit status: 0 when everything checked holds, 1 when something does not (the
problems are listed), 2 for a user error (unknown thread, missing key file,
bad seal or bundle file), which changes nothing. See docs/integrity.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.cli.options import (
    Commands,
    UsageError,
    add_graph_filter,
    add_json_option,
    add_period_options,
    period,
)
from api.cli.progress import ProgressBar
from domain.errors import ThreadNotFoundError
from domain.record.store import open_store
from integrity.reporting import (
    bundle_data,
    bundle_lines,
    problem_line,
    seal_data,
    seal_lines,
    verdict_data,
    verdict_lines,
)
from integrity.verify_log import scan_log, verify_thread_events

if TYPE_CHECKING:
    from domain.integrity.whole_log import Problem

# Seals, bundles and signing (and `cryptography`) are imported by the handlers that
# use them: a plain `holdpoint verify` starts without them.
KEY_VARIABLE = (
    "HOLDPOINT_SEAL_KEY"  # integrity.signing.KEY_VARIABLE (tests/integrity/test_cli_start.py)
)


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = "must be at least 1"
        raise argparse.ArgumentTypeError(msg)
    return value


def register(commands: Commands) -> None:
    """Add `verify`, `seal` and `export` to the `holdpoint` parser's subcommands."""
    jobs_help = (
        "processes that check a large log, this one included (default: one per CPU, at most 4)"
    )
    verify = commands.add_parser(
        "verify",
        help="recompute every hash chain and the log's order; against a seal; or a bundle",
        description=(
            "Without arguments: read every event of the store, recompute each thread's hash "
            "chain, and check that each aggregate's versions run 1, 2, 3... in the order of "
            "their positions, with nothing missing. With THREAD: that thread only. With "
            "--seal: also check that the log up to the seal's position is exactly what was "
            "sealed. With --bundle: check an evidence bundle, without the database; it fails "
            "if any of its events is not covered by a valid seal (see --allow-unsealed), and "
            "says whether anything shows that its last events were not cut off (see "
            "--require-complete). With --export: check a folder of bundles and its manifest; "
            "with --report, a signed oversight report. "
            "Exit status 0 if everything holds, 1 if not (each problem is "
            "listed with its thread, version and position), 2 for a usage error."
        ),
    )
    verify.add_argument("thread", nargs="?", metavar="THREAD", help="only this thread")
    verify.add_argument(
        "--seal",
        metavar="FILE",
        help="a seal file from `holdpoint seal --out`, or `latest` for the latest seal recorded "
        "in the store",
    )
    verify.add_argument(
        "--bundle", metavar="FILE", help="an evidence bundle from `holdpoint export`"
    )
    verify.add_argument(
        "--export",
        metavar="DIR",
        help="a folder from `holdpoint export --since/--until/--graph`: the manifest's "
        "signature, each file's SHA-256 and each bundle (as --bundle checks one), and no "
        "file the manifest does not list; without the database",
    )
    verify.add_argument(
        "--report",
        metavar="FILE",
        help="an oversight report from `holdpoint report --sign --out FILE`: its signature, "
        "in FILE.sig, over this very report, which states the log position and seal it was "
        "computed at; without the database",
    )
    verify.add_argument(
        "--allow-unsealed",
        action="store_true",
        help="with --bundle or --export: accept events no valid seal covers (a bundle with no "
        "seal, or events after the seal's position), checked as a hash chain only, which "
        "whoever edits the file can recompute; without it such a bundle fails (run "
        "`holdpoint seal`, then export again)",
    )
    verify.add_argument(
        "--require-complete",
        action="store_true",
        help="with --bundle: also fail unless the bundle shows that it ends where the thread "
        "did when exported: by a head signed with the seal key (export with "
        f"{KEY_VARIABLE} set), or a sealed ThreadCancelled as its last event; with --export: "
        "so must every bundle, and the manifest must be signed (its list of threads is then "
        "proven whole). No proof can show events recorded after the export",
    )
    verify.add_argument(
        "--public-key",
        metavar="KEY",
        help="the trusted public key (64 hex digits, or a file holding them or a PEM key) the "
        f"seal must be signed by; default: the key of {KEY_VARIABLE} if set, else the key "
        "written in the seal (then compare its id with your published key)",
    )
    verify.add_argument(
        "--clock-skew",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="with --seal: an event recorded after the seal but dated more than this before "
        "it is reported as backdated (default 300)",
    )
    verify.add_argument("--jobs", type=_jobs, metavar="N", help=jobs_help)
    add_json_option(verify, "print the result as JSON")
    verify.set_defaults(handler=_verify)

    seal = commands.add_parser(
        "seal",
        help="verify the log, then sign a digest of it (a Merkle root) and record it",
        description=(
            "Verify the whole log (and the log against the latest seal), then record a seal: "
            "a Merkle root over every event up to the log's head, signed with the Ed25519 "
            f"private key in the file named by {KEY_VARIABLE}. The seal is recorded in the "
            "store as an AuditSealed event and, with --out, written to a file to keep "
            "elsewhere. On any problem nothing is recorded (exit status 1). "
            "--init-key PATH makes a new key instead."
        ),
    )
    seal.add_argument("--out", metavar="FILE", help="also write the seal to this file")
    seal.add_argument(
        "--init-key",
        metavar="PATH",
        help="make a new Ed25519 private key at PATH (never overwritten; mode 0600), its public "
        "key at PATH.pub, and print the public key; seals nothing",
    )
    seal.add_argument("--jobs", type=_jobs, metavar="N", help=jobs_help)
    seal.set_defaults(handler=_seal)

    export = commands.add_parser(
        "export",
        help="write a thread's self-contained evidence bundle, or a period's or graph's bundles",
        description=(
            "Write one thread's evidence bundle: its events exactly as stored, the latest seal "
            "with a Merkle inclusion proof for each event it covers, the graph and its digest, "
            "and the decisions with the reviewers' identities. The whole log is verified "
            "against the seal first; on any problem nothing is written (exit status 1). If "
            f"{KEY_VARIABLE} is set, the thread's head as exported (its last event) is signed "
            "with that key, which must be the latest seal's: a check then tells the bundle from "
            "one with its last events cut off. `holdpoint verify --bundle FILE` checks a bundle "
            "with no database; it fails if an event was recorded after the latest seal: run "
            "`holdpoint seal` first. With --since, --until and/or --graph instead of THREAD: "
            "a bundle for each thread with any event recorded at or after --since and before "
            "--until (either may be left open), begun under --graph if given, written to the "
            "folder --out (new or empty) with manifest.json listing each file and its SHA-256, "
            "the seal, the period and the graph, signed with the seal key if set. The log is "
            "verified once, and a seal is required. `holdpoint verify --export DIR` checks the "
            "folder."
        ),
    )
    export.add_argument("thread", nargs="?", metavar="THREAD", help="the thread to export")
    add_period_options(
        export,
        since="export the threads with an event recorded at or after this ISO 8601 time "
        "(UTC when no offset is given)",
        until="... and before this one (excluded)",
    )
    add_graph_filter(export)
    export.add_argument(
        "--out",
        metavar="FILE",
        required=True,
        help="where to write the bundle; with a period or graph, the folder to write to",
    )
    export.add_argument("--jobs", type=_jobs, metavar="N", help=jobs_help)
    export.set_defaults(handler=_export)


@contextmanager
def _whole_log() -> Iterator[None]:
    """Reading the whole log makes rows and summaries that hold no reference cycles: the
    cyclic collector, left on, would only spend time (a few %) walking them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _writable(path: str) -> Path:
    """The output path, refused before any work if it cannot be written."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path()
    if target.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        msg = f"cannot write {path}: no such folder, a folder, or not writable"
        raise UsageError(msg)
    return target


def _trusted_key(given: str | None) -> tuple[str | None, str]:
    from integrity.signing import load_private_key, parse_public_key, public_hex  # noqa: PLC0415

    if given is not None:
        return parse_public_key(given), "--public-key"
    if os.environ.get(KEY_VARIABLE):
        return public_hex(load_private_key()), f"{KEY_VARIABLE}"
    return None, "the key written in the seal itself: compare its id with your published key"


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        print(f"  {problem_line(problem)}")


def _emit(data: dict[str, Any], lines: list[str], problems: list[Problem], *, as_json: bool) -> int:
    ok = bool(data["ok"])
    if as_json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0 if ok else 1
    for line in lines:
        print(line)
    if problems:
        print(f"FAILED: {len(problems)} problem{'s' * (len(problems) != 1)}:")
        _print_problems(problems)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def _verify(args: argparse.Namespace) -> int:
    if sum(given is not None for given in (args.bundle, args.export, args.report)) > 1:
        msg = "--bundle, --export and --report each check a file alone: give one"
        raise UsageError(msg)
    if args.report is not None:
        return _verify_report(args)
    if args.bundle is not None:
        return _verify_bundle(args)
    if args.export is not None:
        return _verify_export(args)
    if args.allow_unsealed or args.require_complete:
        msg = (
            "--allow-unsealed and --require-complete check bundles: give them with --bundle "
            "or --export"
        )
        raise UsageError(msg)
    if args.thread is not None and args.seal is not None:
        msg = "--seal checks the whole log: give no THREAD with it"
        raise UsageError(msg)
    if args.public_key is not None and args.seal is None:
        msg = "--public-key names the key a seal must be signed by: give it with --seal or --bundle"
        raise UsageError(msg)
    if args.clock_skew < 0:
        msg = "--clock-skew must be >= 0"
        raise UsageError(msg)
    if args.seal is not None:
        return _verify_with_seal(args)
    with open_store(existing=True) as store:
        if args.thread is not None:
            return _verify_thread(store, args.thread, as_json=args.json)
        bar = ProgressBar()
        try:
            with _whole_log():
                scan = scan_log(store, jobs=args.jobs, progress=bar)
        finally:
            bar.finish()
    problems = list(scan.verdict.problems)
    return _emit(
        verdict_data(scan.verdict), verdict_lines(scan.verdict), problems, as_json=args.json
    )


def _verify_bundle(args: argparse.Namespace) -> int:
    from integrity.export import completeness_line, refusals, verify_bundle_file  # noqa: PLC0415

    if args.thread is not None or args.seal is not None:
        msg = "--bundle checks a bundle file alone: give no THREAD and no --seal with it"
        raise UsageError(msg)
    trusted, trusted_by = _trusted_key(args.public_key)
    verdict = verify_bundle_file(args.bundle, trusted)
    refused = refusals(
        verdict, allow_unsealed=args.allow_unsealed, require_complete=args.require_complete
    )
    data = {
        **bundle_data(verdict, trusted_by),
        "ok": verdict.ok and not refused,
        "covered": verdict.covered,
        "complete": verdict.complete,
        "last_version": verdict.last_version,
        "refused": refused,
    }
    lines = [*bundle_lines(verdict, trusted_by), completeness_line(verdict)]
    lines += [f"REFUSED: {reason}." for reason in refused]
    return _emit(data, lines, verdict.problems, as_json=args.json)


def _verify_with_seal(args: argparse.Namespace) -> int:
    from domain.integrity.seal import Seal  # noqa: PLC0415
    from integrity.sealing import latest_seal, load_seal_file, verify_with_seal  # noqa: PLC0415

    seal: Seal | None = None
    if args.seal != "latest":
        seal = load_seal_file(args.seal)
    trusted, trusted_by = _trusted_key(args.public_key)
    with open_store(existing=True) as store:
        if args.seal == "latest":
            document = latest_seal(store)
            if document is None:
                msg = "no seal is recorded in the store yet: run `holdpoint seal` first"
                raise UsageError(msg)
            seal = Seal.from_document(document)
        assert seal is not None
        bar = ProgressBar()
        try:
            with _whole_log():
                scan, check = verify_with_seal(
                    store,
                    seal,
                    trusted,
                    trusted_by,
                    jobs=args.jobs,
                    progress=bar,
                    skew=timedelta(seconds=args.clock_skew),
                )
        finally:
            bar.finish()
    data = verdict_data(scan.verdict)
    data = {**data, "ok": data["ok"] and check.ok, "seal": seal_data(check)}
    lines = verdict_lines(scan.verdict) + seal_lines(check)
    problems = list(scan.verdict.problems) + check.problems
    return _emit(data, lines, problems, as_json=args.json)


def _verify_thread(store: Any, thread_id: str, *, as_json: bool) -> int:
    count, problems = verify_thread_events(store, thread_id)
    if count == 0:
        raise ThreadNotFoundError(thread_id)
    data = {
        "ok": not problems,
        "thread_id": thread_id,
        "events_checked": count,
        "problems": [vars(problem) for problem in problems],
    }
    lines = [f"Checked the {count} events of thread {thread_id!r}: hash chain and order."]
    return _emit(data, lines, problems, as_json=as_json)


def _seal(args: argparse.Namespace) -> int:
    from integrity.sealing import make_seal  # noqa: PLC0415
    from integrity.signing import generate_key, key_id, load_private_key  # noqa: PLC0415

    if args.init_key is not None:
        if args.out is not None:
            msg = "--init-key makes a key and seals nothing: give no --out with it"
            raise UsageError(msg)
        public = generate_key(Path(args.init_key))
        print(f"Wrote a new Ed25519 seal key to {args.init_key} (keep it outside the database).")
        print(f"Use it with: export {KEY_VARIABLE}={args.init_key}")
        print(f"Key id {key_id(public)}; public key (also in {args.init_key}.pub):")
        print(public)
        return 0
    out = _writable(args.out) if args.out is not None else None
    key = load_private_key()
    with open_store(existing=True) as store:
        bar = ProgressBar()
        try:
            with _whole_log():
                document, _, problems = make_seal(store, key, jobs=args.jobs, progress=bar)
        finally:
            bar.finish()
    if document is None:
        print(f"Refused to seal: {len(problems)} problem{'s' * (len(problems) != 1)} in the log:")
        _print_problems(problems)
        print("Nothing was recorded. Find out what happened before sealing again.")
        return 1
    print(
        f"Sealed positions 1-{document['position']:,}: {document['events']:,} events, "
        f"root {document['root']}, key {document['key_id']}; recorded at position "
        f"{document['recorded_at']:,}."
    )
    if out is not None:
        out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"Wrote the seal to {out}: keep a copy where the database's administrators cannot.")
    return 0


def _export(args: argparse.Namespace) -> int:
    from api.cli.reads import record_cli_read  # noqa: PLC0415
    from integrity.export import export_thread, write_bundle  # noqa: PLC0415
    from integrity.signing import load_private_key  # noqa: PLC0415

    chosen = args.since is not None or args.until is not None or args.graph is not None
    if chosen == (args.thread is not None):
        msg = "give a THREAD, or a period and/or a graph (--since, --until, --graph), not both"
        raise UsageError(msg)
    if chosen:
        return _export_period(args)
    out = _writable(args.out)
    key = load_private_key() if os.environ.get(KEY_VARIABLE) else None
    with open_store(existing=True) as store:
        bar = ProgressBar()
        try:
            with _whole_log():
                bundle, problems = export_thread(
                    store, args.thread, jobs=args.jobs, progress=bar, key=key
                )
        finally:
            bar.finish()
        if bundle is not None:
            record_cli_read(store, "export", args.thread, {}, thread_id=args.thread)
    if bundle is None:
        print(f"Refused to export: {len(problems)} problem{'s' * (len(problems) != 1)}:")
        _print_problems(problems)
        print("Nothing was written.")
        return 1
    write_bundle(bundle, out)
    events = bundle["events"]
    sealed = sum(1 for event in events if event["proof"] is not None)
    print(f"Wrote the evidence bundle of thread {args.thread!r} ({len(events)} events) to {out}.")
    if bundle["seal"] is None:
        print(
            "No seal is recorded yet: the bundle proves its chain only, and `holdpoint verify "
            "--bundle` refuses it (unless --allow-unsealed). Run `holdpoint seal`, then export "
            "again.",
            file=sys.stderr,
        )
    elif sealed < len(events):
        print(
            f"{len(events) - sealed} of its events were recorded after the latest seal, and "
            "`holdpoint verify --bundle` refuses it (unless --allow-unsealed): run `holdpoint "
            "seal`, then export again, to cover them.",
            file=sys.stderr,
        )
    else:
        position = bundle["seal"]["position"]
        print(f"All {sealed} events are covered by the seal at position {position:,}.")
    if bundle["head"] is not None:
        head = bundle["head"]
        print(f"Its head, version {head['version']}, is signed with key {head['key_id']}.")
    else:
        print(
            f"{KEY_VARIABLE} is not set: the bundle carries no signed head, so a check cannot "
            "tell it from one with its last events cut off (unless the thread was cancelled).",
            file=sys.stderr,
        )
    return 0


def _export_period(args: argparse.Namespace) -> int:
    from api.cli.reads import record_cli_read  # noqa: PLC0415
    from integrity.period_export import Period, empty_folder, export_period  # noqa: PLC0415
    from integrity.signing import load_private_key  # noqa: PLC0415

    since, until = period(args)
    chosen = Period(since, until, args.graph)
    folder = empty_folder(args.out)
    key = load_private_key() if os.environ.get(KEY_VARIABLE) else None
    with open_store(existing=True) as store:
        bar = ProgressBar()
        try:
            with _whole_log():
                done, problems = export_period(
                    store, chosen, folder, key=key, jobs=args.jobs, progress=bar
                )
        finally:
            bar.finish()
        if done is not None:
            query = {"since": args.since, "until": args.until, "graph_id": args.graph}
            record_cli_read(store, "export", "period", query)
    if done is None:
        print(f"Refused to export: {len(problems)} problem{'s' * (len(problems) != 1)}:")
        _print_problems(problems)
        print("Nothing was written.")
        return 1
    manifest = done.manifest
    threads, seal = manifest["threads"], manifest["seal"]
    if not threads:
        print(f"No thread matches: {folder}/manifest.json says so, and lists none.")
    else:
        events = sum(entry["events"] for entry in threads)
        print(
            f"Wrote {len(threads)} bundle{'s' * (len(threads) != 1)} ({events:,} events) and "
            f"the manifest to {folder}, proven against the seal at position {seal['position']:,}."
        )
    if done.unsealed_threads:
        print(
            f"{len(done.unsealed_threads)} of the threads have events recorded after the "
            "latest seal, and `holdpoint verify --export` refuses their bundles (unless "
            "--allow-unsealed): run `holdpoint seal`, then export again, to cover them.",
            file=sys.stderr,
        )
    if "signature" in manifest:
        print(f"The manifest is signed with key {manifest['key_id']}.")
    else:
        print(
            f"{KEY_VARIABLE} is not set: the manifest is not signed, so nothing shows that no "
            "bundle was dropped from the folder, and no bundle's head is signed.",
            file=sys.stderr,
        )
    return 0


def _verify_export(args: argparse.Namespace) -> int:
    from integrity.period_export import verify_export  # noqa: PLC0415

    if args.thread is not None or args.seal is not None:
        msg = "--export checks a folder alone: give no THREAD and no --seal with it"
        raise UsageError(msg)
    trusted, trusted_by = _trusted_key(args.public_key)
    verdict = verify_export(
        args.export,
        trusted,
        allow_unsealed=args.allow_unsealed,
        require_complete=args.require_complete,
    )
    manifest = verdict.manifest
    count = len(manifest["threads"])
    data = {
        "ok": verdict.ok,
        "threads": count,
        "period": manifest.get("period"),
        "seal": manifest["seal"],
        "signed_by": verdict.signed_by,
        "trusted_by": trusted_by,
        "failures": verdict.failures,
    }
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0 if verdict.ok else 1
    print(
        f"Checked the manifest and its {count} bundle{'s' * (count != 1)} in {args.export}, "
        f"against the seal at position {manifest['seal'].get('position')} (the key trusted: "
        f"{trusted_by})."
    )
    if verdict.signed_by is not None:
        print(f"The manifest is signed by key {verdict.signed_by}: its list of threads is whole.")
    elif "signature" not in manifest:
        print("NOT SIGNED: the manifest proves nothing of its list (a bundle may be missing).")
    if verdict.failures:
        print(f"FAILED: {len(verdict.failures)} problem{'s' * (len(verdict.failures) != 1)}:")
        for failure in verdict.failures:
            print(f"  {failure}")
    print("OK" if verdict.ok else "FAILED")
    return 0 if verdict.ok else 1


def _verify_report(args: argparse.Namespace) -> int:
    from integrity.report_signing import verify_report  # noqa: PLC0415

    if args.thread is not None or args.seal is not None:
        msg = "--report checks a report file alone: give no THREAD and no --seal with it"
        raise UsageError(msg)
    if args.allow_unsealed or args.require_complete:
        msg = "--allow-unsealed and --require-complete check bundles, not a report"
        raise UsageError(msg)
    trusted, trusted_by = _trusted_key(args.public_key)
    verdict = verify_report(args.report, trusted)
    block = verdict.report.get("computed_at") or {}
    data = {
        "ok": verdict.ok,
        "problem": verdict.problem,
        "key_id": verdict.signature.get("key_id"),
        "trusted_by": trusted_by,
        "computed_at": block,
        "period": verdict.report.get("period"),
    }
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0 if verdict.ok else 1
    seal = block.get("seal") or {}
    print(
        f"The oversight report in {args.report}, computed at log position "
        f"{block.get('log_position')} on {block.get('time')}, when the latest seal covered "
        f"positions 1-{seal.get('position')} (root {seal.get('root')})."
    )
    print(f"Signed by key {verdict.signature.get('key_id')} (the key trusted: {trusted_by}).")
    if verdict.problem is not None:
        print(f"FAILED: {verdict.problem}.")
    print("OK" if verdict.ok else "FAILED")
    return 0 if verdict.ok else 1
