"""Keyring: API keys and refused attempts, kept as events in a `Workflows` store.

`authenticate()` runs on every HTTP request, so it is cached, but a
revocation made by any process that shares the store (the CLI while the
server runs, another server replica) takes effect on the very next request:

- A key's events are read once and folded; the cache keeps, per key id, the
  digest, the principal and the aggregate version it was read at.
- Every later call asks the store for the key's events after that version,
  `select_events(key_uuid, gt=version, limit=1)`: one primary-key lookup
  that returns no rows unless the key changed. Only then is the key re-read.
- A revoked key is final, so a cached revoked key is refused without a query.

That is exactly one indexed point query per request (no decoding, no
folding); unknown key ids are not cached, so a key created later by another
process is found at once too. The server asks it through a probe of
`persistence.key_probe`: one prepared statement on a connection of its own,
without the store's pool and transaction machinery, which cost ten times the
query on SQLite (`SQLiteKeyProbe`) and as much again as the query on
PostgreSQL (`PostgresKeyProbe`).

A key whose stored events cannot be decoded (the store was damaged there) is
refused as a key that is not valid, with a message that says so; the other
keys are not affected. `list()` leaves such a key out and `refusals()` such a
refusal (`holdpoint verify` names them).

Keys and refusals are found through the notification log filtered by event
topic. That is a scan of the log: cheap for the rare `list()`, and for
`refusals()` proportional to the events after `after`; a read model would
make the audit queue cheaper on a long log.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import IntegrityError, Notification
from eventsourcing.utils import get_topic

from domain.access.identity import (
    ApiKey,
    KeyringBootstrap,
    Principal,
    RefusedAttempt,
    check_principal_id,
    digest_matches,
    format_key,
    is_key_id,
    key_digest,
    key_uuid,
    new_key,
    parse_key,
)
from domain.access.role_records import recorded_roles
from domain.access.roles import BUILT_IN
from domain.access.scope import Attestation, KeyScope, attestation, key_scope
from domain.errors import (
    InvalidKeyExpiryError,
    KeyExpiredError,
    KeyRevokedError,
    MissingKeyError,
    UnknownKeyError,
)
from domain.record.application import UNDECODABLE, Workflows, fold_events
from domain.record.hashing import to_json

KEY_TOPICS = [get_topic(ApiKey.KeyCreated), get_topic(ApiKey.KeyRevoked)]
REFUSAL_TOPICS = [get_topic(RefusedAttempt.AccessRefused)]
BOOTSTRAP_PRINCIPALS = (("agent", "agent"), ("reviewer", "reviewer"), ("auditor", "auditor"))
BOOTSTRAP_NOTE = "made at first start"
PAGE = 500  # notifications read per query when scanning the log
REFUSALS_MAX = 1000
MAX_POSITION = 2**63 - 1  # notification ids are 64-bit integers in every store
_NO_MATCH = key_digest("")  # compared against when a key id is unknown, to take the same time
_MALFORMED = "The API key is malformed: a key looks like hp_<12 hex digits>_<43 characters>"
_NOT_VALID = "The API key {} is not valid"
_DAMAGED = (
    "The API key {} is not valid: its record in the store cannot be read (the store is "
    "damaged there; an administrator can run `holdpoint verify`)"
)


@dataclass(frozen=True)
class KeyInfo:
    """What may be shown of a key: never its digest, never its secret."""

    key_id: str
    principal_id: str
    role: str
    created_at: datetime
    revoked_at: datetime | None
    revoked_by: dict[str, Any] | None
    note: str | None
    created_by: dict[str, Any] | None = None
    revoke_reason: str | None = None
    expires_at: datetime | None = None
    scope: KeyScope | None = None
    attestation: Attestation | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or datetime.now(UTC)) >= self.expires_at

    @property
    def valid(self) -> bool:
        """Neither revoked nor expired: it authenticates its principal."""
        return not self.revoked and not self.expired()

    def principal(self) -> Principal:
        """The principal the key authenticates, with its scope and attestation."""
        return Principal(self.principal_id, self.role, self.key_id, self.scope, self.attestation)


@dataclass(frozen=True)
class RefusalInfo:
    """One refused attempt, as recorded; `position` is its place in the event log."""

    position: int
    timestamp: datetime
    principal_id: str | None
    role: str | None
    action: str
    target: str | None
    reason: str
    message: str


@dataclass(frozen=True)
class _CachedKey:
    id: UUID
    version: int
    digest: str
    principal: Principal
    revoked_at: datetime | None
    expires_at: datetime | None


class KeyProbe(Protocol):
    """Whether a key's aggregate has events after a version: the per-request check."""

    def changed_since(self, key_id: UUID, version: int) -> bool: ...

    def close(self) -> None: ...


class RecorderProbe:
    """The check through the store's recorder: works on every store."""

    def __init__(self, store: Workflows) -> None:
        self.store = store

    def changed_since(self, key_id: UUID, version: int) -> bool:
        return bool(self.store.recorder.select_events(key_id, gt=version, limit=1))

    def close(self) -> None:
        """Nothing of its own to close."""


def check_expiry(expires_at: datetime | None) -> str | None:
    """A key's expiry as recorded (ISO 8601, UTC); InvalidKeyExpiryError unless it is a
    moment with its time zone, in the future."""
    if expires_at is None:
        return None
    if expires_at.tzinfo is None:
        raise InvalidKeyExpiryError(f"A key's expiry names its time zone: {expires_at}")
    if expires_at <= datetime.now(UTC):
        raise InvalidKeyExpiryError(f"A key's expiry must be in the future, not {expires_at}")
    return expires_at.astimezone(UTC).isoformat()


def key_info(key: ApiKey) -> KeyInfo:
    return KeyInfo(
        key_id=key.key_id,
        principal_id=key.principal_id,
        role=key.role,
        created_at=key.created_on,
        revoked_at=key.revoked_at,
        revoked_by=key.revoked_by,
        note=key.note,
        created_by=key.created_by,
        revoke_reason=key.revoke_reason,
        expires_at=None if key.expires_at is None else datetime.fromisoformat(key.expires_at),
        scope=KeyScope.of(key.scope),
        attestation=Attestation.of(key.attestation),
    )


class Keyring:
    """API keys of principals, and the refused attempts, in one store.

    Safe to share between threads: the cache holds immutable entries and a
    stale entry is only ever replaced by a newer read.
    """

    def __init__(self, store: Workflows, probe: KeyProbe | None = None) -> None:
        self.store = store
        self.probe: KeyProbe = probe or RecorderProbe(store)
        self._cache: dict[str, _CachedKey] = {}

    # -- keys ------------------------------------------------------------

    def create(
        self,
        principal_id: str,
        role: str,
        *,
        actor: dict[str, Any] | None = None,
        note: str | None = None,
        expires_at: datetime | None = None,
        graphs: builtins.list[str] | None = None,
        max_amount: float | None = None,
        attestation_text: str | None = None,
        attested_on: date | None = None,
    ) -> tuple[KeyInfo, str]:
        """Make a key for a principal: its info and the raw key, shown only now. The
        role is a built-in one or a custom one on record (`domain.access.role_records`).
        From `expires_at` on (a moment with its time zone, in the future), it
        authenticates no one. `graphs` and `max_amount` limit what it may decide, and an
        attestation (its text and date) says why its holder may (`domain.access.scope`).

        Raises InvalidPrincipalError, InvalidRoleError, InvalidKeyExpiryError or
        InvalidKeyScopeError, recording nothing.
        """
        key, raw = self._new_key(
            principal_id,
            role,
            actor,
            note,
            check_expiry(expires_at),
            key_scope(graphs, max_amount),
            attestation(attestation_text, attested_on),
        )
        self._save_new(key)
        return key_info(key), raw

    def authenticate(self, raw_key: str | None) -> Principal:
        """The principal a raw key belongs to.

        Raises MissingKeyError ("no_key"), UnknownKeyError ("unknown_key":
        malformed, unknown id or wrong secret, told apart only in the message)
        or KeyRevokedError ("revoked_key", only to the holder of the secret).
        """
        if raw_key is None or not raw_key.strip():
            raise MissingKeyError
        parsed = parse_key(raw_key.strip())
        if parsed is None:
            raise UnknownKeyError(None, _MALFORMED)
        key_id, secret = parsed
        cached = self._current(key_id)
        if cached is None:
            digest_matches(secret, _NO_MATCH)
            raise UnknownKeyError(key_id, _NOT_VALID.format(key_id))
        if not digest_matches(secret, cached.digest):
            raise UnknownKeyError(key_id, _NOT_VALID.format(key_id))
        if cached.revoked_at is not None:
            raise KeyRevokedError(key_id, cached.revoked_at.isoformat())
        if cached.expires_at is not None and datetime.now(UTC) >= cached.expires_at:
            raise KeyExpiredError(key_id, cached.expires_at.isoformat())
        return cached.principal

    def revoke(
        self, key_id: str, *, actor: dict[str, Any] | None = None, reason: str | None = None
    ) -> KeyInfo:
        """Revoke a key for good. Raises UnknownKeyError or KeyAlreadyRevokedError."""
        key = self._key(key_id)
        if key is None:
            raise UnknownKeyError(key_id)
        key.revoke(actor=to_json(actor, "The actor"), reason=reason)
        try:
            self.store.save(key)
        except IntegrityError:  # revoked by another process meanwhile: say so
            return self.revoke(key_id, actor=actor, reason=reason)
        self._cache.pop(key_id, None)
        return key_info(key)

    def get(self, key_id: str) -> KeyInfo:
        """One key's info. Raises UnknownKeyError."""
        key = self._key(key_id)
        if key is None:
            raise UnknownKeyError(key_id)
        return key_info(key)

    def list(self) -> list[KeyInfo]:
        """Every key, revoked ones included, newest first; but a key with an event that
        cannot be decoded (it authenticates no one)."""
        keys: dict[UUID, ApiKey] = {}
        damaged: set[UUID] = set()
        for notification in self._scan(KEY_TOPICS):
            key = UUID(str(notification.originator_id))
            if key in damaged:
                continue
            try:
                event = self.store.mapper.to_domain_event(notification)
            except UNDECODABLE:
                damaged.add(key)
                keys.pop(key, None)
                continue
            keys[key] = fold_events(keys.get(key), [event])
        return [key_info(key) for key in reversed(keys.values())]

    def has_keys(self) -> bool:
        """Whether any key was ever made in this store (revoked ones count)."""
        return self._any_key()

    def ensure_bootstrap_keys(self) -> builtins.list[tuple[KeyInfo, str]]:
        """On a store without any key, make an agent, a reviewer and an auditor.

        Returns them with their raw keys, or [] when the store has keys. Of
        several processes starting at once on an empty store one makes them:
        the keys are saved with a marker of fixed id, in one transaction.
        """
        if self._any_key():
            return []
        made = [self._new_key(p, role, None, BOOTSTRAP_NOTE) for p, role in BOOTSTRAP_PRINCIPALS]
        marker = KeyringBootstrap(key_ids=[key.key_id for key, _ in made])
        try:
            self.store.save(marker, *(key for key, _ in made))
        except IntegrityError:
            return []
        return [(key_info(key), raw) for key, raw in made]

    # -- refusals --------------------------------------------------------

    def record_refusal(
        self,
        *,
        principal: Principal | None,
        action: str,
        reason: str,
        message: str,
        target: str | None = None,
    ) -> None:
        """Record one refused attempt: who (None when unauthenticated), what, why."""
        attempt = RefusedAttempt.refuse(
            principal=principal, action=action, target=target, reason=reason, message=message
        )
        self.store.save(attempt)

    def refusals(self, limit: int = 100, after: int | None = None) -> builtins.list[RefusalInfo]:
        """Refused attempts after log position `after` (default: from the first), oldest
        first, at most `limit` (1 to 1000). Page on with the last one's `position`."""
        if not 1 <= limit <= REFUSALS_MAX:
            msg = f"limit must be between 1 and {REFUSALS_MAX}, not {limit}"
            raise ValueError(msg)
        if after is not None and after >= MAX_POSITION:
            return []  # log positions are 64-bit: nothing is recorded after this one
        notifications = self.store.recorder.select_notifications(
            start=after, limit=limit, topics=REFUSAL_TOPICS, inclusive_of_start=after is None
        )
        return [refusal for n in notifications if (refusal := self._refusal(n)) is not None]

    # -- inside ----------------------------------------------------------

    def _new_key(
        self,
        principal_id: str,
        role: str,
        actor: dict[str, Any] | None,
        note: str | None,
        expires_at: str | None = None,
        scope: KeyScope | None = None,
        attested: Attestation | None = None,
    ) -> tuple[ApiKey, str]:
        check_principal_id(principal_id)
        if role not in BUILT_IN.names():  # a custom role was checked against the record
            recorded_roles(self.store).check(role)
        key_id, secret = new_key()
        key = ApiKey(
            key_id=key_id,
            principal_id=principal_id,
            role=role,
            digest=key_digest(secret),
            actor=to_json(actor, "The actor"),
            note=note,
            expires_at=expires_at,
            scope=None if scope is None else scope.as_record(),
            attestation=None if attested is None else attested.as_record(),
        )
        return key, format_key(key_id, secret)

    def _save_new(self, key: ApiKey) -> None:
        """Save a new key; in the unlikely case that its random id is taken, say so."""
        try:
            self.store.save(key)
        except IntegrityError:
            msg = f"key id {key.key_id} is taken (a 1 in 2**48 chance): try again"
            raise RuntimeError(msg) from None

    def _key(self, key_id: str) -> ApiKey | None:
        if not is_key_id(key_id):
            return None
        rows = self.store.recorder.select_events(key_uuid(key_id))
        if not rows:
            return None
        try:
            return fold_events(None, map(self.store.mapper.to_domain_event, rows))  # type: ignore[no-any-return]
        except UNDECODABLE:
            self._cache.pop(key_id, None)
            raise UnknownKeyError(key_id, _DAMAGED.format(key_id)) from None

    def _current(self, key_id: str) -> _CachedKey | None:
        """The key as the store has it now: from the cache when it has not changed."""
        cached = self._cache.get(key_id)
        if cached is not None:
            if cached.revoked_at is not None:
                return cached  # revocation is final
            if not self.probe.changed_since(cached.id, cached.version):
                return cached
        key = self._key(key_id)
        if key is None:
            return None
        expires_at = None if key.expires_at is None else datetime.fromisoformat(key.expires_at)
        fresh = _CachedKey(
            key.id, key.version, key.digest, key.principal(), key.revoked_at, expires_at
        )
        self._cache[key_id] = fresh
        return fresh

    def _any_key(self) -> bool:
        notifications = self.store.recorder.select_notifications(
            start=None, limit=1, topics=KEY_TOPICS[:1]
        )
        return bool(notifications)

    def _scan(self, topics: Sequence[str]) -> Iterator[Notification]:
        start: int | None = None
        while True:
            page = self.store.recorder.select_notifications(
                start=start, limit=PAGE, topics=topics, inclusive_of_start=start is None
            )
            yield from page
            if len(page) < PAGE:
                return
            start = page[-1].id

    def _refusal(self, notification: Notification) -> RefusalInfo | None:
        """The refusal recorded there; None if it cannot be decoded."""
        try:
            event = self.store.mapper.to_domain_event(notification)
        except UNDECODABLE:
            return None
        assert isinstance(event, RefusedAttempt.AccessRefused)
        return RefusalInfo(
            position=notification.id,
            timestamp=event.timestamp,
            principal_id=event.principal_id,
            role=event.role,
            action=event.action,
            target=event.target,
            reason=event.reason,
            message=event.message,
        )
