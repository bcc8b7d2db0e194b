"""The oversight report signed, and tied to the log position and seal it was computed at.

A signed report is computed at one stated log position: every read model had
applied the log up to it, and none moved while the report was computed
(`at_one_position`). Its `computed_at` block states that position, the latest
seal then (its position and root) and the time. The signature is detached, in
a file beside the report (`FILE.sig`): the seal key signs the SHA-256 of the
report's canonical JSON (`domain.record.hashing.canonical_json`), so the
report file stays the report, and any change to it, a number or a space
inside a string, fails `verify_report`, which needs no database.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from domain.errors import HoldpointError
from domain.record.hashing import canonical_json
from integrity.signing import sign, signature_problem

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SIGNATURE_FORMAT = "holdpoint-report-signature/1"
SIGNATURE_SUFFIX = ".sig"
ATTEMPTS = 5  # computations of a report whose read models moved meanwhile, at most
Result = TypeVar("Result")


class ReportSigningError(HoldpointError, ValueError):
    """A report cannot be signed as asked, or a report or its signature file cannot be read."""


def at_one_position(
    catch_up: Callable[[], object],
    positions: Callable[[], list[int]],
    compute: Callable[[], Result],
    attempts: int = ATTEMPTS,
) -> tuple[Result, int]:
    """`compute()` and the log position it was computed at: the read models caught up,
    all at one position, the same before and after. A projector that moved them
    meanwhile (a busy server) makes it catch up and compute again."""
    for _ in range(attempts):
        catch_up()
        before = positions()
        result = compute()
        if positions() == before and len(set(before)) == 1:
            return result, before[0]
    msg = (
        f"the read models moved on while the report was computed, {attempts} times: "
        "sign it again when the store is quieter"
    )
    raise ReportSigningError(msg)


def computed_at(position: int, seal: dict[str, Any], moment: datetime) -> dict[str, Any]:
    """The report's `computed_at` block: the log position, the latest seal then, the time."""
    return {
        "log_position": position,
        "seal": {name: seal[name] for name in ("position", "root", "key_id", "sealed_at")},
        "time": moment.isoformat(),
    }


def report_digest(report: dict[str, Any]) -> str:
    """The SHA-256 of the report's canonical JSON (what its signature signs)."""
    return hashlib.sha256(canonical_json(report).encode()).hexdigest()


def sign_report(report: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The detached signature of `report` (as read back from its JSON), by the seal key."""
    position = report["computed_at"]["log_position"]
    statement = {
        "format": SIGNATURE_FORMAT,
        "report_sha256": report_digest(report),
        "log_position": position,
    }
    return sign(statement, key)


def write_signed(report_text: str, key: Ed25519PrivateKey, path: Path) -> dict[str, Any]:
    """Write the report to `path` and its signature to `path.sig`; return the signature."""
    signature = sign_report(json.loads(report_text), key)
    try:
        path.write_text(report_text, encoding="utf-8")
        Path(f"{path}{SIGNATURE_SUFFIX}").write_text(
            json.dumps(signature, indent=2) + "\n", encoding="utf-8"
        )
    except OSError as error:
        msg = f"cannot write {path}: {error.strerror}"
        raise ReportSigningError(msg) from None
    return signature


@dataclass
class ReportVerdict:
    """A report file checked against its signature: `problem` says why it fails."""

    report: dict[str, Any]
    signature: dict[str, Any]
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def verify_report(path: str, trusted: str | None) -> ReportVerdict:
    """Check the report in `path` with its signature in `path.sig`: signed by `trusted`
    (or the key the signature names), over this very report, which states where it was
    computed."""
    report, signature = _read(path), _read(f"{path}{SIGNATURE_SUFFIX}")
    if signature.get("format") != SIGNATURE_FORMAT:
        msg = f"{path}{SIGNATURE_SUFFIX} is not a report signature ({SIGNATURE_FORMAT!r})"
        raise ReportSigningError(msg)
    problem = signature_problem(signature, trusted)
    block = report.get("computed_at")
    if problem is not None:
        problem = f"the signature: {problem}"
    elif report_digest(report) != signature.get("report_sha256"):
        problem = "the report is not the one signed: it was changed after it was signed"
    elif not isinstance(block, dict) or block.get("log_position") != signature["log_position"]:
        problem = "the report does not state the log position it was signed at"
    return ReportVerdict(report, signature, problem)


def _read(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_bytes())
    except OSError as error:
        msg = f"cannot read {path}: {error.strerror}"
        raise ReportSigningError(msg) from None
    except ValueError as error:
        msg = f"{path} is not JSON: {error}"
        raise ReportSigningError(msg) from None
    if not isinstance(data, dict):
        msg = f"{path} is not a JSON object"
        raise ReportSigningError(msg)
    return data
