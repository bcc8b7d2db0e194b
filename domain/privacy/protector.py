"""Which fields of a thread's event are personal, and their protected form.

A thread of a graph that declares personal data (`Personal`) records each event
twice in memory: its fields in plaintext, which the domain folds as ever (values,
routing, reducers), and the same fields with each personal value sealed in an
envelope under the subject's key, which is what the event's hash covers and what
the store writes (`protected_fields`). A thread without a declaration has no
protector and records as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain.errors import PersonalDataError
from domain.privacy.envelopes import Cipher, seal, subject_ref
from domain.privacy.personal import Personal
from domain.privacy.subject_keys import SubjectKeys

PROTECTED = "_personal_fields"  # the event's attribute holding its fields as recorded

# Per event kind: the fields that may hold personal values and what they hold.
STATE, METADATA, PAYLOAD, FORK = "state", "metadata", "payload", "fork"
FIELDS: dict[str, dict[str, str]] = {
    "ThreadStarted": {"metadata": METADATA, "initial": STATE},
    "ThreadForked": {"metadata": METADATA, "state": FORK},
    "InputReceived": {"input": STATE},
    "NodeCompleted": {"update": STATE},
    "StateEdited": {"values": STATE},
    "MetadataUpdated": {"metadata": METADATA},
    "InterruptRaised": {"value": PAYLOAD},
    "InterruptResumed": {"resume": PAYLOAD},
    "InterruptApproved": {"resume": PAYLOAD},
}


class Protector:
    """Seals the personal values of a graph's events under each subject's key."""

    def __init__(self, personal: Personal, keys: SubjectKeys, cipher: Cipher) -> None:
        self.personal = personal
        self.keys = keys
        self.cipher = cipher

    def protect(
        self,
        event_name: str,
        fields: dict[str, Any],
        metadata: Mapping[str, Any],
        values: Mapping[str, Any],
    ) -> dict[str, Any] | None:
        """`fields` with their personal values sealed, or None when they hold none.

        `metadata` and `values`: the thread's as they stand before the event (they
        name the subject). Raises PersonalDataError for personal values whose
        subject is not known yet.
        """
        places = FIELDS.get(event_name)
        if not places:
            return None
        sealer = _Sealer(self, event_name, fields, metadata, values)
        protected = dict(fields)
        for name, kind in places.items():
            if name in fields:
                protected[name] = self._sealed(kind, fields[name], sealer)
        return protected if sealer.sealed else None

    def _sealed(self, kind: str, value: Any, sealer: _Sealer) -> Any:
        spec = self.personal
        if kind == FORK and type(value) is dict:
            carried = dict(value)
            if type(carried.get("values")) is dict:
                carried["values"] = _keys_sealed(carried["values"], spec.state_keys, sealer)
            if type(carried.get("done")) is dict:
                carried["done"] = {
                    node: _update_sealed(done, spec.state_keys, sealer)
                    for node, done in carried["done"].items()
                }
            return carried
        keys = {
            STATE: spec.state_keys,
            METADATA: spec.metadata_keys,
            PAYLOAD: frozenset(spec.payload),
        }.get(kind, frozenset())
        return _keys_sealed(value, keys, sealer) if type(value) is dict else value


def _keys_sealed(value: dict[str, Any], keys: frozenset[str], sealer: _Sealer) -> dict[str, Any]:
    return {k: sealer(v) if k in keys else v for k, v in value.items()}


def _update_sealed(done: Any, keys: frozenset[str], sealer: _Sealer) -> Any:
    if type(done) is dict and type(done.get("update")) is dict:
        return {**done, "update": _keys_sealed(done["update"], keys, sealer)}
    return done


class _Sealer:
    """Seals one event's personal values; finds its subject and key on first use."""

    def __init__(
        self,
        protector: Protector,
        event_name: str,
        fields: dict[str, Any],
        metadata: Mapping[str, Any],
        values: Mapping[str, Any],
    ) -> None:
        self._protector = protector
        self._event_name = event_name
        self._fields = fields
        self._metadata = metadata
        self._values = values
        self._seal: Callable[[Any], Any] | None = None
        self.sealed = 0

    def __call__(self, value: Any) -> Any:
        if self._seal is None:
            subject = self._subject()
            ref = subject_ref(subject)
            key = self._protector.keys.key_for(ref)
            cipher = self._protector.cipher
            self._seal = lambda v: seal(v, ref, key, cipher)
        self.sealed += 1
        return self._seal(value)

    def _subject(self) -> str:
        personal, fields = self._protector.personal, self._fields
        metadata = {**self._metadata, **(fields.get("metadata") or {})}
        values = {**self._values}
        for name in ("initial", "input", "update", "values"):
            if type(fields.get(name)) is dict:
                values.update(fields[name])
        if type(fields.get("state")) is dict and type(fields["state"].get("values")) is dict:
            values.update(fields["state"]["values"])
        subject = personal.subject_in(metadata, values)
        if subject is None:
            msg = (
                f"The {self._event_name} event holds personal data, but its data subject "
                f"({personal.subject}) is not known yet: give it when the thread starts"
            )
            raise PersonalDataError(msg)
        return subject
