"""Exporting the evidence of a period or a graph: one bundle per thread, and a manifest.

A period selects the threads with any event recorded at or after `since` and
before `until` (`SELECTS`); a graph, the threads begun under it. The log is
verified against the latest seal once, up to its head as the export began,
and each thread's bundle is cut from that one verified log
(`integrity.export`). The manifest lists each bundle's file with its SHA-256,
the seal, the period and the graph; signed with the seal key, it proves the
list itself: no bundle can be dropped or swapped unseen. `verify_export`
checks a folder with no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from domain.errors import HoldpointError
from domain.integrity.bundle import BundleFormatError, BundleVerdict, check_bundle
from domain.integrity.whole_log import THREAD_TOPICS, Problem
from domain.record.application import Workflows
from integrity.export import (
    check_seal_key,
    refusals,
    thread_bundle,
    thread_rows,
    verify_against_seal,
    write_bundle,
)
from integrity.reporting import problem_line
from integrity.scan import Scanner, scanner_for
from integrity.sealing import latest_seal
from integrity.signing import sign, signature_problem

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from integrity.verify_log import Progress

Check = Callable[[dict[str, Any]], str | None]  # why a signed document fails, or None
MANIFEST_FORMAT = "holdpoint-export/1"
MANIFEST = "manifest.json"
SEAL_FIELDS = ("position", "root", "key_id", "sealed_at")  # the seal, as the manifest names it
SELECTS = "the threads with any event recorded at or after `since` and before `until`"
# The library writes an event's time first, in this form (other forms: parsed in full).
_STAMP = b'{"timestamp":{"_type_":"datetime_iso","_data_":"'


class ExportSetupError(HoldpointError, ValueError):
    """A period export cannot start: no seal, an unknown graph, or an unusable folder."""


@dataclass(frozen=True)
class Period:
    """What a period export selects: `since` (included) to `until` (excluded), either
    open, and, if given, only the threads begun under `graph_id`."""

    since: datetime | None = None
    until: datetime | None = None
    graph_id: str | None = None

    def holds(self, moment: datetime) -> bool:
        return (self.since is None or moment >= self.since) and (
            self.until is None or moment < self.until
        )

    def document(self) -> dict[str, Any]:
        def text(moment: datetime | None) -> str | None:
            return None if moment is None else moment.isoformat()

        return {
            "since": text(self.since),
            "until": text(self.until),
            "graph_id": self.graph_id,
            "selects": SELECTS + ("" if self.graph_id is None else ", begun under `graph_id`"),
        }


@dataclass
class PeriodExport:
    """What was written: the manifest, and the threads with events after the seal."""

    manifest: dict[str, Any]
    unsealed_threads: list[str] = field(default_factory=list)


def empty_folder(path: str) -> Path:
    """The folder to write to: new, or empty; ExportSetupError before any work if not."""
    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        msg = f"{path} exists and is not an empty folder: name a new or empty one"
        raise ExportSetupError(msg)
    if not folder.parent.is_dir():
        msg = f"cannot write {path}: its parent folder does not exist"
        raise ExportSetupError(msg)
    return folder


def export_period(
    store: Workflows,
    period: Period,
    folder: Path,
    *,
    key: Ed25519PrivateKey | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[PeriodExport | None, list[Problem]]:
    """Write a bundle per selected thread and the manifest into `folder` (made if
    missing); or write nothing and return the problems found in the log."""
    document = latest_seal(store)
    if document is None:
        msg = "no seal is recorded in the store yet: run `holdpoint seal`, then export"
        raise ExportSetupError(msg)
    check_seal_key(document, key)
    scanner = scanner_for(store)
    try:
        head = scanner.head()
        threads = _selected(scanner, period, head, progress)
        verified, problems = verify_against_seal(
            store, document, head, jobs=jobs, progress=progress
        )
        if verified is None:
            return None, problems
        folder.mkdir(exist_ok=True)
        entries, unsealed = [], []
        for done, (aggregate_id, thread_id, graph_id) in enumerate(threads, start=1):
            rows = thread_rows(scanner, thread_id, head)
            bundle = thread_bundle(thread_id, rows, verified, key)
            path = folder / f"{aggregate_id}.json"
            write_bundle(bundle, path)
            entries.append(
                {
                    "thread_id": thread_id,
                    "graph_id": graph_id,
                    "file": path.name,
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                    "events": len(rows),
                }
            )
            if rows[-1][0] > verified.seal.position:
                unsealed.append(thread_id)
            if progress is not None:
                progress("bundles", done, len(threads))
    finally:
        scanner.close()
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "period": period.document(),
        "exported_at": datetime.now(UTC).isoformat(),
        "log_head": head,
        "seal": {name: document[name] for name in SEAL_FIELDS},
        "threads": entries,
    }
    if key is not None:
        manifest = sign(manifest, key)
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    (folder / MANIFEST).write_text(text, encoding="utf-8")
    return PeriodExport(manifest, unsealed), []


def _selected(
    scanner: Scanner, period: Period, head: int, progress: Progress | None
) -> list[tuple[str, str, str | None]]:
    """(aggregate id, thread id, graph id) of each selected thread, in the log order of
    its first event in the period; ExportSetupError for a graph no thread was begun under."""
    in_period: dict[str, None] = {}
    graphs: set[Any] = set()
    for rows in _batches(scanner, head, progress):
        for _, aggregate_id, version, topic, state in rows:
            if topic not in THREAD_TOPICS:
                continue
            if version == 1:
                graphs.add(_field(state, "graph_id"))
            if aggregate_id not in in_period:
                moment = _recorded_at(state)
                if moment is not None and period.holds(moment):
                    in_period[aggregate_id] = None
    if period.graph_id is not None and period.graph_id not in graphs:
        msg = f"no thread in the store was begun under graph {period.graph_id!r}"
        raise ExportSetupError(msg)
    selected = []
    firsts = scanner.first_events(list(in_period))
    for aggregate_id in in_period:
        first = firsts.get(aggregate_id, b"{}")
        thread_id, graph_id = _field(first, "thread_id"), _field(first, "graph_id")
        if isinstance(thread_id, str) and period.graph_id in (None, graph_id):
            selected.append((aggregate_id, thread_id, graph_id))
    return selected


def _batches(scanner: Scanner, head: int, progress: Progress | None) -> Iterator[list[Any]]:
    for rows in scanner.batches(0, head):
        yield rows
        if progress is not None:
            progress("selecting threads", rows[-1][0], head)


def _recorded_at(state: bytes) -> datetime | None:
    """The event's `timestamp`; None if unreadable (the verification then says why)."""
    try:
        if state.startswith(_STAMP):
            text = state[len(_STAMP) : state.index(b'"', len(_STAMP))].decode()
        else:
            text = str(orjson.loads(state)["timestamp"]["_data_"])
        moment = datetime.fromisoformat(text)
    except (KeyError, TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _field(state: bytes, name: str) -> Any:
    try:
        data = orjson.loads(state)
    except orjson.JSONDecodeError:
        return None
    return data.get(name) if isinstance(data, dict) else None


# -- checking an exported folder ------------------------------------------------


@dataclass
class ExportVerdict:
    """What checking an exported folder found: `failures`, each naming its file."""

    manifest: dict[str, Any]
    signed_by: str | None = None  # the id of the key whose signature of the manifest holds
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def verify_export(
    folder: str,
    trusted: str | None,
    *,
    allow_unsealed: bool = False,
    require_complete: bool = False,
) -> ExportVerdict:
    """Check the manifest's signature (by `trusted`, or its own key), each listed file's
    digest, each bundle as `verify --bundle` does, and that no file is unlisted.
    Unsigned, the manifest proves nothing of its list: a failure with `trusted` or
    `require_complete`."""
    where = Path(folder)
    manifest = _manifest(where)
    verdict = ExportVerdict(manifest)
    failures = verdict.failures
    seal = manifest["seal"]
    if "signature" in manifest:
        why = signature_problem(manifest, trusted)
        if why is not None:
            failures.append(f"{MANIFEST}: {why}")
        elif manifest.get("key_id") != seal.get("key_id"):
            failures.append(f"{MANIFEST}: signed by key {manifest.get('key_id')}, not the seal's")
        else:
            verdict.signed_by = str(manifest["key_id"])
    elif require_complete or trusted is not None:
        failures.append(
            f"{MANIFEST}: not signed, so whoever edits the folder can drop a thread from it "
            "and recompute the digests (export with the seal key set)"
        )

    def bundle_signature(document: dict[str, Any]) -> str | None:
        return signature_problem(document, trusted)

    listed = {MANIFEST}
    for entry in manifest["threads"]:
        name = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or Path(name).name != name:
            failures.append(f"{MANIFEST}: an entry names no file of the folder ({name!r})")
            continue
        listed.add(name)
        found = _bundle_failures(where / name, entry, seal, bundle_signature)
        if isinstance(found, list):
            failures += [f"{name}: {failure}" for failure in found]
            continue
        failures += [f"{name}: {problem_line(problem)}" for problem in found.problems]
        if found.signature_problem is not None:
            failures.append(f"{name}: the seal: {found.signature_problem}")
        reasons = refusals(found, allow_unsealed=allow_unsealed, require_complete=require_complete)
        failures += [f"{name}: REFUSED: {reason}" for reason in reasons]
    failures += [
        f"{path.name}: in the folder, not in the manifest"
        for path in sorted(where.iterdir())
        if path.name not in listed
    ]
    return verdict


def _bundle_failures(
    path: Path, entry: dict[str, Any], seal: dict[str, Any], check: Check
) -> BundleVerdict | list[str]:
    """The bundle's verdict if it is the file the manifest lists, else why not."""
    try:
        data = path.read_bytes()
    except OSError as error:
        return [f"listed in the manifest, but cannot be read: {error.strerror}"]
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        return ["its SHA-256 is not the one the manifest lists: the file was changed"]
    try:
        verdict = check_bundle(json.loads(data), check)
    except (ValueError, BundleFormatError) as error:
        return [f"not a bundle: {error}"]
    failures = []
    if verdict.thread_id != entry.get("thread_id"):
        failures.append(f"holds thread {verdict.thread_id!r}, not {entry.get('thread_id')!r}")
    proven_by = None if verdict.seal is None else verdict.seal.document
    if proven_by is None or any(proven_by.get(name) != seal.get(name) for name in SEAL_FIELDS):
        failures.append("its seal is not the one the manifest names")
    return failures or verdict


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_bytes())
    except OSError as error:
        msg = f"cannot read {path}: {error.strerror} (is {folder} a `holdpoint export` folder?)"
        raise BundleFormatError(msg) from None
    except ValueError as error:
        msg = f"{path} is not JSON: {error}"
        raise BundleFormatError(msg) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        msg = f"{path} is not an export manifest (its format must be {MANIFEST_FORMAT!r})"
        raise BundleFormatError(msg)
    if not isinstance(manifest.get("threads"), list) or not isinstance(manifest.get("seal"), dict):
        msg = f"{path} lists no threads or names no seal"
        raise BundleFormatError(msg)
    return manifest
