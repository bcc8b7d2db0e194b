"""Ed25519 keys for seals: made once, kept outside the database, named by the environment.

The private key is a PEM file (PKCS #8, unencrypted, mode 0600) whose path is
in `HOLDPOINT_SEAL_KEY`; `holdpoint seal --init-key PATH` makes one and writes
its public key, as 64 hex digits, next to it (`PATH.pub`). A key is named by
its id: the first 16 hex digits of the SHA-256 of the public key.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from domain.errors import HoldpointError
from domain.integrity.seal import statement_bytes

KEY_VARIABLE = "HOLDPOINT_SEAL_KEY"


class SealKeyError(HoldpointError, ValueError):
    """A seal key is missing, unreadable or not an Ed25519 key."""


def key_id(public_hex: str) -> str:
    return hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()[:16]


def public_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def generate_key(path: Path) -> str:
    """Write a new private key to `path` (never over an existing file) and its public
    key to `path.pub`; return the public key's hex."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = public_hex(key)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        msg = f"{path} already exists: a seal key is never overwritten; choose another path"
        raise SealKeyError(msg) from None
    except OSError as error:
        msg = f"cannot create {path}: {error.strerror}"
        raise SealKeyError(msg) from None
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    Path(f"{path}.pub").write_text(public + "\n", encoding="ascii")
    return public


def load_private_key(path: str | None = None) -> Ed25519PrivateKey:
    """The private key at `path`, default the file named by HOLDPOINT_SEAL_KEY."""
    path = path or os.environ.get(KEY_VARIABLE)
    if not path:
        msg = (
            f"no seal key: set {KEY_VARIABLE} to the path of an Ed25519 private key file "
            "(make one with `holdpoint seal --init-key PATH`)"
        )
        raise SealKeyError(msg)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        msg = f"cannot read the seal key {path} ({KEY_VARIABLE}): {error.strerror}"
        raise SealKeyError(msg) from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        msg = f"the seal key {path} is not an unencrypted PEM private key: {error}"
        raise SealKeyError(msg) from None
    if not isinstance(key, Ed25519PrivateKey):
        msg = f"the seal key {path} is not an Ed25519 key"
        raise SealKeyError(msg)
    return key


def parse_public_key(text: str) -> str:
    """A public key given as 64 hex digits, or as a file holding them or a PEM public key."""
    candidate = text.strip()
    if len(candidate) == 64 and _is_hex(candidate):
        return candidate.lower()
    try:
        data = Path(candidate).read_bytes()
    except OSError as error:
        msg = (
            f"--public-key {text!r} is neither 64 hex digits nor a readable file: {error.strerror}"
        )
        raise SealKeyError(msg) from None
    stripped = data.strip()
    if len(stripped) == 64 and _is_hex(stripped.decode("ascii", "replace")):
        return stripped.decode("ascii").lower()
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        msg = f"{candidate} holds neither 64 hex digits nor a PEM public key"
        raise SealKeyError(msg) from None
    if not isinstance(key, Ed25519PublicKey):
        msg = f"{candidate} is not an Ed25519 public key"
        raise SealKeyError(msg)
    return public_hex(key)


def _is_hex(text: str) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return True


def sign(statement: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The statement, with the key that signs it and its signature."""
    public = public_hex(key)
    document = {**statement, "public_key": public, "key_id": key_id(public)}
    document["signature"] = key.sign(statement_bytes(document)).hex()
    return document


def signature_problem(document: dict[str, Any], trusted: str | None = None) -> str | None:
    """Why the document's signature does not hold (by `trusted`, or its own key), or None."""
    public = str(document.get("public_key", ""))
    if trusted is not None and public.lower() != trusted.lower():
        return (
            f"signed by key {_id_or_raw(public)}, not by the trusted key {key_id(trusted)} "
            "(--public-key)"
        )
    try:
        verifier = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public))
        signature = bytes.fromhex(str(document.get("signature", "")))
        verifier.verify(signature, statement_bytes(document))
    except (ValueError, InvalidSignature):
        return "the signature does not verify: the statement was altered, or not signed by its key"
    if key_id(public) != document.get("key_id"):
        return "the statement's key_id is not its public key's id"
    return None


def _id_or_raw(public: str) -> str:
    return key_id(public) if len(public) == 64 and _is_hex(public) else repr(public)
