"""Envelopes: a personal value as it is recorded, encrypted with its data subject's key.

`{"_personal_": {"subject": REF, "kid": KEY_ID, "nonce": B64, "ct": B64}}` stands in
an event's fields where the value was: the value's canonical JSON encrypted by the
store's `Cipher` (AES-256-GCM: integrity/subject_cipher.py, named by topic, as the
domain imports no cryptography library), with the subject's reference and the key's
id as associated data (an envelope moved to another subject does not open). REF is a
namespaced SHA-256 of the subject's id: the id itself is never recorded. It is a
pseudonym, not an anonymisation: whoever knows an id can compute its REF, which is
what lets `holdpoint erase --subject ID` find it.

Opening an envelope gives the value back while the key is kept; once the key is
destroyed (or another key stands under the REF: new data of an erased subject gets a
new key), it reads as `ERASED`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from domain.record.hashing import canonical_json

MARK = "_personal_"
MARK_BYTES = b'"_personal_"'
ERASED = "[erased]"
KEY_BYTES = 32
_REF_NAMESPACE = "holdpoint-subject:v1:"

SubjectKey = tuple[str, bytes]  # (key id, 32 bytes)
Keys = Mapping[str, SubjectKey]  # REF -> the subject's key, for the refs found


class Cipher(Protocol):
    """An authenticated cipher: what seals and opens envelopes."""

    def encrypt(self, key: bytes, plaintext: bytes, aad: bytes) -> tuple[bytes, bytes]:
        """(nonce, ciphertext)."""
        ...

    def decrypt(self, key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        """The plaintext; raises if the ciphertext, nonce or `aad` was changed."""
        ...


def subject_ref(subject_id: str) -> str:
    """The reference recorded for a data subject: a namespaced SHA-256 of the id."""
    return hashlib.sha256((_REF_NAMESPACE + subject_id).encode()).hexdigest()


def new_key() -> SubjectKey:
    """A fresh key and its id."""
    return os.urandom(8).hex(), os.urandom(KEY_BYTES)


def seal(value: Any, ref: str, key: SubjectKey, cipher: Cipher) -> dict[str, Any]:
    """`value` (plain JSON) as an envelope under the subject's key."""
    kid, secret = key
    text = canonical_json(value).encode()
    nonce, ct = cipher.encrypt(secret, text, f"{ref}:{kid}".encode())
    return {
        MARK: {
            "subject": ref,
            "kid": kid,
            "nonce": base64.b64encode(nonce).decode(),
            "ct": base64.b64encode(ct).decode(),
        }
    }


def is_envelope(value: Any) -> bool:
    return type(value) is dict and len(value) == 1 and type(value.get(MARK)) is dict


def open_envelope(envelope: dict[str, Any], keys: Keys, cipher: Cipher) -> Any:
    """The value an envelope holds, or ERASED when its key is gone (or is not the one)."""
    inner = envelope[MARK]
    ref, kid = inner.get("subject"), inner.get("kid")
    key = keys.get(ref) if isinstance(ref, str) else None
    if key is None or key[0] != kid:
        return ERASED
    try:
        nonce = base64.b64decode(inner["nonce"])
        ct = base64.b64decode(inner["ct"])
        text = cipher.decrypt(key[1], nonce, ct, f"{ref}:{kid}".encode())
    except Exception:  # a damaged envelope reads as erased; verify reports the damage
        return ERASED
    return json.loads(text)


def envelopes_in(value: Any) -> Iterator[dict[str, Any]]:
    """Every envelope in a JSON value, depth first."""
    if is_envelope(value):
        yield value
    elif type(value) is dict:
        for item in value.values():
            yield from envelopes_in(item)
    elif type(value) is list:
        for item in value:
            yield from envelopes_in(item)


def refs_in(value: Any) -> set[str]:
    """The subjects' references of the envelopes in a JSON value."""
    return {str(e[MARK].get("subject")) for e in envelopes_in(value)}


def replaced(value: Any, replace: Callable[[dict[str, Any]], Any]) -> Any:
    """`value` with each envelope replaced by `replace(envelope)` (a copy where one was)."""
    if is_envelope(value):
        return replace(value)
    if type(value) is dict:
        return {k: replaced(v, replace) for k, v in value.items()}
    if type(value) is list:
        return [replaced(v, replace) for v in value]
    return value


def opened(value: Any, keys: Keys, cipher: Cipher) -> Any:
    """`value` with every envelope opened (or ERASED)."""
    return replaced(value, lambda envelope: open_envelope(envelope, keys, cipher))
