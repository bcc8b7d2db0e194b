"""Who may act: principals, their API keys, and the record of refused attempts.

An API key is `hp_<key_id>_<secret>`: `key_id` is 12 lowercase hex digits
that name the key (safe to show and log), `secret` is
`secrets.token_urlsafe(32)`. Only the SHA-256 of the secret is recorded, in
`ApiKey.KeyCreated`; the raw key exists once, when it is made. A key belongs
to one principal with one role, and is revoked for good with
`ApiKey.KeyRevoked`.

Each refused attempt (no key, wrong role, separation of duties, ...) is an
aggregate of its own, `RefusedAttempt`, made by one `AccessRefused` event
with a random id, so that refusals recorded at the same time never conflict.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.access.roles import BUILT_IN, BUILT_IN_ROLES, Roles
from domain.access.scope import Attestation, KeyScope
from domain.errors import InvalidPrincipalError, KeyAlreadyRevokedError
from domain.record.topics import keep_topics

ROLES = tuple(BUILT_IN_ROLES)  # the built-in roles; a holdpoint.toml may add its own
REFUSAL_REASONS = (
    "no_key",
    "unknown_key",
    "revoked_key",
    "expired_key",
    "wrong_role",
    "separation_of_duties",
    "stale_interrupt",
    "unknown_interrupt",
    "conflict",
    "forbidden",
    "rate_limited",
    "hold_point",
    "four_eyes",
    "question_changed",
    "out_of_scope",
    "sign_in_refused",
)
KEY_PREFIX = "hp_"
PRINCIPAL_ID_MAX = 128
ACTION_MAX = 300  # characters kept of a refused attempt's action and target
MESSAGE_MAX = 1000
KEY_NAMESPACE = uuid5(NAMESPACE_URL, "https://holdpoint.dev/api-keys")
BOOTSTRAP_ID = uuid5(KEY_NAMESPACE, "bootstrap")

_KEY_ID = re.compile(r"[0-9a-f]{12}")
_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
_KEY_LENGTH = len(KEY_PREFIX) + 12 + 1 + 43


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: who, in which role, through which key."""

    id: str
    role: str
    key_id: str
    scope: KeyScope | None = None  # what the key may decide (domain.access.scope)
    attestation: Attestation | None = None  # why its holder is competent to
    # How they signed in: "api_key", or "oidc" (the UI, through a provider: `key_id` is
    # then '' and `issuer` names the provider whose claims gave the id and the role).
    via: str = "api_key"
    issuer: str | None = None

    def as_actor(self) -> dict[str, Any]:
        """The actor recorded on the events this principal causes (see domain.access.actor):
        with the key's scope and attestation when it has them, so each decision shows
        under what authority it was made."""
        actor: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "authenticated": True,
            "via": self.via,
        }
        if self.issuer is not None:
            actor["issuer"] = self.issuer
        if self.scope is not None:
            actor["scope"] = self.scope.as_record()
        if self.attestation is not None:
            actor["attestation"] = self.attestation.as_record()
        return actor


def new_key() -> tuple[str, str]:
    """A fresh `(key_id, secret)`."""
    return secrets.token_hex(6), secrets.token_urlsafe(32)


def format_key(key_id: str, secret: str) -> str:
    return f"{KEY_PREFIX}{key_id}_{secret}"


def parse_key(raw: object) -> tuple[str, str] | None:
    """`(key_id, secret)` of a raw key, or None if it is malformed (never raises)."""
    if not isinstance(raw, str) or len(raw) != _KEY_LENGTH or not raw.startswith(KEY_PREFIX):
        return None
    key_id, separator, secret = raw[3:15], raw[15], raw[16:]
    if separator != "_" or not _KEY_ID.fullmatch(key_id) or not _SECRET.fullmatch(secret):
        return None
    return key_id, secret


def is_key_id(text: str) -> bool:
    """Whether `text` is a key id: 12 lowercase hex digits."""
    return isinstance(text, str) and _KEY_ID.fullmatch(text) is not None


def key_digest(secret: str) -> str:
    """What is recorded of a key: the SHA-256 hex digest of its secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def digest_matches(secret: str, digest: str) -> bool:
    """Whether `secret` hashes to `digest`, compared in constant time."""
    return hmac.compare_digest(key_digest(secret), digest)


def actor_name(actor: dict[str, Any] | None) -> str:
    """Who an actor is, for messages: its id, or the command line when it has none."""
    return str(actor["id"]) if actor and actor.get("id") else "an operator (no actor recorded)"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key_uuid(key_id: str) -> UUID:
    """The aggregate id of a key: derived, so any process can address it."""
    return uuid5(KEY_NAMESPACE, key_id)


def check_role(role: str, roles: Roles = BUILT_IN) -> str:
    """InvalidRoleError unless `role` is one of `roles` (default: the built-in ones)."""
    return roles.check(role)


def check_principal_id(principal_id: str) -> str:
    """A principal id is 1 to 128 printable characters, without surrounding spaces."""
    if not isinstance(principal_id, str) or not principal_id.strip():
        msg = "The principal id must not be empty"
        raise InvalidPrincipalError(msg)
    if len(principal_id) > PRINCIPAL_ID_MAX:
        msg = f"The principal id has {len(principal_id)} characters; at most {PRINCIPAL_ID_MAX}"
        raise InvalidPrincipalError(msg)
    if not principal_id.isprintable() or principal_id != principal_id.strip():
        msg = (
            f"The principal id {principal_id!r} must be printable characters "
            "without leading or trailing spaces"
        )
        raise InvalidPrincipalError(msg)
    return principal_id


class ApiKey(Aggregate):
    """One API key of one principal, as its events tell it."""

    class KeyCreated(Aggregate.Created):
        key_id: str
        principal_id: str
        role: str
        digest: str
        actor: dict[str, Any] | None
        note: str | None
        expires_at: str | None = None  # ISO 8601, UTC: it authenticates no one from then
        # Added with authority scopes (domain.access.scope); older keys have neither.
        scope: dict[str, Any] | None = None  # {"graphs": [...] | None, "max_amount": n | None}
        attestation: dict[str, Any] | None = None  # {"text": ..., "attested_on": "YYYY-MM-DD"}

    class KeyRevoked(Aggregate.Event):
        actor: dict[str, Any] | None
        reason: str | None

        def apply(self, aggregate: Any) -> None:
            aggregate.revoked_at = self.timestamp
            aggregate.revoked_by = self.actor
            aggregate.revoke_reason = self.reason

    @staticmethod
    def create_id(key_id: str) -> UUID:
        return key_uuid(key_id)

    def __init__(
        self,
        key_id: str,
        principal_id: str,
        role: str,
        digest: str,
        actor: dict[str, Any] | None,
        note: str | None,
        expires_at: str | None = None,
        scope: dict[str, Any] | None = None,
        attestation: dict[str, Any] | None = None,
    ) -> None:
        self.key_id = key_id
        self.expires_at = expires_at
        self.scope = scope
        self.attestation = attestation
        self.principal_id = principal_id
        self.role = role
        self.digest = digest
        self.created_by = actor
        self.note = note
        self.revoked_at: datetime | None = None
        self.revoked_by: dict[str, Any] | None = None
        self.revoke_reason: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def principal(self) -> Principal:
        return Principal(
            id=self.principal_id,
            role=self.role,
            key_id=self.key_id,
            scope=KeyScope.of(self.scope),
            attestation=Attestation.of(self.attestation),
        )

    def revoke(self, actor: dict[str, Any] | None, reason: str | None) -> None:
        """Revoke the key for good; a second revocation is refused, recording nothing."""
        if self.revoked_at is not None:
            raise KeyAlreadyRevokedError(
                self.key_id, self.revoked_at.isoformat(), actor_name(self.revoked_by)
            )
        self.trigger_event(self.KeyRevoked, actor=actor, reason=reason)


class KeyringBootstrap(Aggregate):
    """The first keys of a store, made once: its fixed id lets one process win."""

    class KeysBootstrapped(Aggregate.Created):
        key_ids: list[str]

    @staticmethod
    def create_id() -> UUID:
        return BOOTSTRAP_ID

    def __init__(self, key_ids: list[str]) -> None:
        self.key_ids = key_ids


class RefusedAttempt(Aggregate):
    """One attempt that was refused: who, what, on which target, and why."""

    class AccessRefused(Aggregate.Created):
        principal_id: str | None
        role: str | None
        action: str
        target: str | None
        reason: str
        message: str

    @classmethod
    def refuse(
        cls,
        *,
        principal: Principal | None = None,
        actor: dict[str, Any] | None = None,
        action: str,
        target: str | None,
        reason: str,
        message: str,
    ) -> RefusedAttempt:
        """Record one refusal of `principal` (authenticated), or of the `actor` a domain rule
        refused (None for both: unauthenticated). Caller-supplied text is cut to a bounded
        length, so that an anonymous caller cannot make a refusal record large."""
        if reason not in REFUSAL_REASONS:
            msg = f"Unknown refusal reason {reason!r}: use one of {', '.join(REFUSAL_REASONS)}"
            raise ValueError(msg)
        if principal is not None:
            actor = {"id": principal.id, "role": principal.role}
        actor = actor or {}
        return cls(
            principal_id=None if actor.get("id") is None else str(actor["id"]),
            role=None if actor.get("role") is None else str(actor["role"]),
            action=_cut(action, ACTION_MAX),
            target=None if target is None else _cut(target, ACTION_MAX),
            reason=reason,
            message=_cut(message, MESSAGE_MAX),
        )

    def __init__(
        self,
        principal_id: str | None,
        role: str | None,
        action: str,
        target: str | None,
        reason: str,
        message: str,
    ) -> None:
        self.principal_id = principal_id
        self.role = role
        self.action = action
        self.target = target
        self.reason = reason
        self.message = message


# Recorded from `domain.identity` before the domain had subpackages; the topics stay.
keep_topics(ApiKey, "domain.identity")
keep_topics(KeyringBootstrap, "domain.identity")
keep_topics(RefusedAttempt, "domain.identity")
