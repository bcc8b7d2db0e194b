"""The keyring on every store kind: keys made, checked, revoked and listed, and the
refused attempts recorded for auditors.

"Another process" is a second `Keyring` on a second connection to the same
store (for SQLite and PostgreSQL, `open_store` again on its URL; in memory,
the same store object, the only way to share it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path

import pytest
from eventsourcing.utils import get_topic

from domain.access.identity import ApiKey, Principal, key_uuid, parse_key
from domain.access.keyring import KeyInfo, Keyring, key_info
from domain.access.role_records import record_roles
from domain.access.roles import custom_roles
from domain.access.scope import Attestation, KeyScope
from domain.errors import (
    AuthenticationError,
    InvalidKeyExpiryError,
    InvalidKeyScopeError,
    InvalidPrincipalError,
    InvalidRoleError,
    KeyAlreadyRevokedError,
    KeyExpiredError,
    KeyRevokedError,
    MissingKeyError,
    UnknownKeyError,
)
from domain.record.application import Workflows, fold_events
from domain.record.store import open_store
from tests.conftest import store_url
from tests.damaged_store import Damage
from tests.integrity.tamper import Row

ADMIN = {"id": "ada", "role": "admin"}


@pytest.fixture
def keyring(store: Workflows) -> Keyring:
    return Keyring(store)


@pytest.fixture
def other_store(store: Workflows) -> Iterator[Workflows]:
    """The same store, as another process opens it."""
    if store.url == "memory://":
        yield store
        return
    with open_store(store.url) as other:
        yield other


def head(store: Workflows) -> int:
    return store.recorder.max_notification_id() or 0


def all_stored(store: Workflows) -> list:
    return list(store.recorder.select_notifications(start=None, limit=100_000))


# -- create and authenticate -------------------------------------------------


def test_a_new_key_authenticates_as_its_principal_and_role(keyring):
    # When
    info, raw = keyring.create("rita", "reviewer", actor=ADMIN, note="on call")

    # Then
    assert keyring.authenticate(raw) == Principal(id="rita", role="reviewer", key_id=info.key_id)
    assert parse_key(raw) is not None
    assert (info.principal_id, info.role, info.note, info.created_by) == (
        "rita",
        "reviewer",
        "on call",
        ADMIN,
    )
    assert info.revoked_at is None
    assert not info.revoked


def test_a_key_authenticates_again_from_the_cache_and_with_surrounding_spaces(keyring):
    info, raw = keyring.create("rita", "reviewer")

    assert keyring.authenticate(raw) == keyring.authenticate(f" {raw} ")
    assert keyring.authenticate(raw).key_id == info.key_id


def test_a_bad_principal_or_role_is_refused_and_nothing_is_recorded(keyring, store):
    before = head(store)

    with pytest.raises(InvalidRoleError, match="Unknown role 'boss'"):
        keyring.create("rita", "boss")
    with pytest.raises(InvalidPrincipalError, match="must not be empty"):
        keyring.create("", "reviewer")
    with pytest.raises(InvalidPrincipalError, match="at most 128"):
        keyring.create("r" * 129, "reviewer")

    assert head(store) == before
    assert keyring.list() == []


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_no_key_is_refused_as_no_key(keyring, raw):
    with pytest.raises(MissingKeyError, match="Authorization: Bearer") as caught:
        keyring.authenticate(raw)
    assert caught.value.reason == "no_key"


@pytest.mark.parametrize("raw", ["secret", "hp_nothex", "Bearer hp_0123456789ab_" + "s" * 43])
def test_a_malformed_key_is_refused_as_unknown(keyring, raw):
    with pytest.raises(UnknownKeyError, match="malformed") as caught:
        keyring.authenticate(raw)
    assert caught.value.reason == "unknown_key"


def test_a_well_formed_key_that_was_never_made_is_refused_as_unknown(keyring):
    keyring.create("rita", "reviewer")

    with pytest.raises(UnknownKeyError, match="The API key 0123456789ab is not valid") as caught:
        keyring.authenticate("hp_0123456789ab_" + "s" * 43)
    assert caught.value.reason == "unknown_key"


def test_a_known_key_id_with_the_wrong_secret_is_refused_as_unknown(keyring):
    info, raw = keyring.create("rita", "reviewer")
    forged = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    keyring.authenticate(raw)  # cached

    with pytest.raises(UnknownKeyError, match=f"The API key {info.key_id} is not valid"):
        keyring.authenticate(forged)


def test_every_refusal_of_authenticate_is_an_authentication_error_with_a_reason(keyring):
    info, raw = keyring.create("rita", "reviewer")
    keyring.revoke(info.key_id)
    reasons = []
    for attempt in (None, "junk", "hp_0123456789ab_" + "s" * 43, raw):
        with pytest.raises(AuthenticationError) as caught:
            keyring.authenticate(attempt)
        reasons.append(caught.value.reason)

    assert reasons == ["no_key", "unknown_key", "unknown_key", "revoked_key"]


# -- revoke ------------------------------------------------------------------


def test_a_revoked_key_no_longer_authenticates(keyring):
    # Given
    info, raw = keyring.create("rita", "reviewer")
    keyring.authenticate(raw)

    # When
    revoked = keyring.revoke(info.key_id, actor=ADMIN, reason="left the team")

    # Then
    assert (revoked.revoked_by, revoked.revoke_reason) == (ADMIN, "left the team")
    assert revoked.revoked_at is not None
    with pytest.raises(KeyRevokedError, match=f"The API key {info.key_id} was revoked at") as c:
        keyring.authenticate(raw)
    assert c.value.reason == "revoked_key"


def test_a_revocation_by_another_process_takes_effect_at_once(keyring, other_store):
    # Given a key this process has just authenticated (and cached)
    info, raw = keyring.create("rita", "reviewer")
    assert keyring.authenticate(raw).id == "rita"

    # When another process revokes it
    Keyring(other_store).revoke(info.key_id, reason="lost laptop")

    # Then the very next request with it is refused here
    with pytest.raises(KeyRevokedError):
        keyring.authenticate(raw)


def test_a_key_made_by_another_process_works_at_once_even_after_a_miss(keyring, other_store):
    # Given this process was asked for a key id it does not know
    with pytest.raises(UnknownKeyError):
        keyring.authenticate("hp_0123456789ab_" + "s" * 43)

    # When another process makes a key
    _, raw = Keyring(other_store).create("amy", "agent")

    # Then it authenticates here at once
    assert keyring.authenticate(raw).role == "agent"


def test_revoking_an_unknown_key_is_an_error(keyring, store):
    before = head(store)

    with pytest.raises(UnknownKeyError, match="No API key '0123456789ab' exists"):
        keyring.revoke("0123456789ab")
    with pytest.raises(UnknownKeyError, match="No API key 'not-a-key-id' exists"):
        keyring.revoke("not-a-key-id")
    assert head(store) == before


def test_revoking_twice_is_an_error_and_records_nothing(keyring, store):
    # Given
    info, _ = keyring.create("rita", "reviewer")
    keyring.revoke(info.key_id, actor=ADMIN)
    before = head(store)

    # When / Then
    with pytest.raises(KeyAlreadyRevokedError, match=r"already revoked at .* by ada"):
        keyring.revoke(info.key_id, reason="again")
    assert head(store) == before


def test_a_revocation_that_loses_a_race_says_already_revoked(
    keyring, store, other_store, monkeypatch
):
    # Given this process read the key just before another process revoked it
    info, _ = keyring.create("rita", "reviewer")
    stale = [keyring._key(info.key_id)]
    Keyring(other_store).revoke(info.key_id, actor=ADMIN)
    before = head(store)
    read = keyring._key
    monkeypatch.setattr(keyring, "_key", lambda key_id: stale.pop() if stale else read(key_id))

    # When it records its revocation on its stale copy
    # Then the store refuses the write, and revoke() says who revoked it first
    with pytest.raises(KeyAlreadyRevokedError, match="by ada"):
        keyring.revoke(info.key_id, reason="me too")
    assert head(store) == before


# -- list --------------------------------------------------------------------


def test_list_shows_every_key_newest_first_with_its_revocation_and_never_a_digest(keyring):
    # Given
    first, _ = keyring.create("rita", "reviewer", note="first")
    second, _ = keyring.create("amy", "agent")
    keyring.revoke(first.key_id, actor=ADMIN, reason="rotated")

    # When
    keys = keyring.list()

    # Then
    assert [(k.key_id, k.principal_id, k.role) for k in keys] == [
        (second.key_id, "amy", "agent"),
        (first.key_id, "rita", "reviewer"),
    ]
    assert keys[0].revoked_at is None
    assert (keys[1].revoked_by, keys[1].revoke_reason, keys[1].note) == (ADMIN, "rotated", "first")
    assert keys[1].created_at < keys[1].revoked_at
    assert not any("digest" in name for name in KeyInfo.__dataclass_fields__)
    assert keyring.get(first.key_id) == keys[1]


def test_list_pages_through_a_long_log(keyring, store, monkeypatch):
    monkeypatch.setattr("domain.access.keyring.PAGE", 2)
    made = [keyring.create(f"p{n}", "agent")[0].key_id for n in range(5)]

    assert [k.key_id for k in keyring.list()] == made[::-1]


# -- bootstrap ---------------------------------------------------------------


def test_an_empty_store_gets_an_agent_a_reviewer_and_an_auditor_once(keyring):
    # When
    made = keyring.ensure_bootstrap_keys()

    # Then
    assert [(info.principal_id, info.role) for info, _ in made] == [
        ("agent", "agent"),
        ("reviewer", "reviewer"),
        ("auditor", "auditor"),
    ]
    for info, raw in made:
        assert keyring.authenticate(raw) == Principal(info.principal_id, info.role, info.key_id)
    assert keyring.ensure_bootstrap_keys() == []
    assert len(keyring.list()) == 3


def test_a_store_with_any_key_gets_no_bootstrap_keys(keyring):
    info, _ = keyring.create("ada", "admin")
    keyring.revoke(info.key_id)

    assert keyring.ensure_bootstrap_keys() == []
    assert [k.principal_id for k in keyring.list()] == ["ada"]


def test_of_two_processes_that_found_the_store_empty_only_one_makes_keys(
    keyring, other_store, monkeypatch
):
    # Given another process that looked before this one made its keys
    late = Keyring(other_store)
    monkeypatch.setattr(late, "_any_key", lambda: False)
    made = keyring.ensure_bootstrap_keys()

    # When it goes on to make its own
    again = late.ensure_bootstrap_keys()

    # Then it makes none
    assert (len(made), again) == (3, [])
    assert len(keyring.list()) == 3


# -- refusals ----------------------------------------------------------------


def test_refusals_are_recorded_and_read_back_oldest_first(keyring):
    # Given
    amy = Principal(id="amy", role="agent", key_id="0123456789ab")
    keyring.record_refusal(principal=None, action="GET /approvals", reason="no_key", message="a")
    keyring.record_refusal(
        principal=amy,
        action="POST /approvals/{interrupt_id}/decision",
        target="i-1",
        reason="separation_of_duties",
        message="amy started thread t-1 and may not decide its interrupts",
    )

    # When
    refusals = keyring.refusals()

    # Then
    assert [(r.principal_id, r.role, r.reason, r.target) for r in refusals] == [
        (None, None, "no_key", None),
        ("amy", "agent", "separation_of_duties", "i-1"),
    ]
    assert refusals[1].action == "POST /approvals/{interrupt_id}/decision"
    assert refusals[1].message == "amy started thread t-1 and may not decide its interrupts"
    assert refusals[0].position < refusals[1].position
    assert refusals[0].timestamp <= refusals[1].timestamp


def test_refusals_page_on_from_a_position_and_skip_other_events(keyring):
    # Given refusals with keys made between them
    for n in range(5):
        keyring.record_refusal(principal=None, action=f"GET /{n}", reason="no_key", message="")
        keyring.create(f"p{n}", "agent")

    # When
    first = keyring.refusals(limit=2)
    second = keyring.refusals(limit=2, after=first[-1].position)
    rest = keyring.refusals(after=second[-1].position)

    # Then
    assert [r.action for r in first + second + rest] == [f"GET /{n}" for n in range(5)]
    assert keyring.refusals(after=rest[-1].position) == []


def test_a_bad_refusal_or_limit_is_refused_and_nothing_is_recorded(keyring, store):
    before = head(store)

    with pytest.raises(ValueError, match="Unknown refusal reason"):
        keyring.record_refusal(principal=None, action="GET /", reason="bored", message="")
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        keyring.refusals(limit=0)
    assert head(store) == before


# -- secrecy -----------------------------------------------------------------


def test_no_raw_key_or_secret_is_ever_stored(keyring, store):
    # Given keys made, used, refused and revoked
    made = [keyring.create("rita", "reviewer"), *keyring.ensure_bootstrap_keys()]
    info, raw = made[0]
    keyring.authenticate(raw)
    keyring.revoke(info.key_id, actor=ADMIN, reason="rotated")
    keyring.record_refusal(principal=None, action="GET /", reason="revoked_key", message="x")

    # When every stored event is read as bytes
    stored = all_stored(store)

    # Then the digests are there in plain text (so the scan reads what is stored) ...
    states = b"\n".join(n.state for n in stored)
    assert all(keyring._key(i.key_id).digest.encode() in states for i, _ in made)
    # ... and no raw key or secret is
    for _, raw in made:
        _, secret = parse_key(raw)
        assert raw.encode() not in states
        assert secret.encode() not in states
        assert secret[:16].encode() not in states
    assert {n.topic for n in stored} >= {
        "domain.identity:ApiKey.KeyCreated",
        "domain.identity:ApiKey.KeyRevoked",
        "domain.identity:RefusedAttempt.AccessRefused",
    }


def test_keys_are_aggregates_the_store_can_read_back(keyring, store):
    info, _ = keyring.create("rita", "reviewer")
    keyring.revoke(info.key_id)

    key = store.repository.get(keyring._key(info.key_id).id)

    assert isinstance(key, ApiKey)
    assert (key.version, key.revoked) == (2, True)


# -- a key whose stored events are damaged ------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def damageable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Workflows]:
    """A real store whose rows a test may damage with SQL (`tests.damaged_store.Damage`)."""
    with open_store(store_url(request.param, tmp_path, request)) as store:
        yield store


def key_row(damage: Damage, key_id: str, event: type) -> Row:
    aggregate = key_uuid(key_id).hex
    topic = get_topic(event)
    return next(r for r in damage.tamper.rows() if r[1] == aggregate and r[3] == topic)


def test_a_key_whose_creation_is_damaged_is_refused_and_the_others_work(damageable):
    # Given two keys, and the stored creation of one cut short
    keyring = Keyring(damageable)
    damaged, damaged_raw = keyring.create("vic", "reviewer", actor=ADMIN)
    _, sound_raw = keyring.create("rita", "reviewer", actor=ADMIN)
    damage = Damage(damageable.url, damageable)
    damage.cut_short(key_row(damage, damaged.key_id, ApiKey.KeyCreated))
    damage.close()

    # Then that key authenticates no one, and says why; the other does; the list omits it
    with pytest.raises(UnknownKeyError, match="its record in the store cannot be read"):
        keyring.authenticate(damaged_raw)
    assert keyring.authenticate(sound_raw).id == "rita"
    assert [info.principal_id for info in keyring.list()] == ["rita"]
    with pytest.raises(UnknownKeyError, match="cannot be read"):
        keyring.revoke(damaged.key_id, actor=ADMIN)


def test_a_cached_key_whose_revocation_is_damaged_is_refused(damageable):
    # Given a key authenticated once (so cached), then revoked, its revocation cut short
    keyring = Keyring(damageable)
    info, raw = keyring.create("rob", "reviewer", actor=ADMIN)
    keyring.authenticate(raw)
    Keyring(damageable).revoke(info.key_id, actor=ADMIN, reason="left")  # another process
    damage = Damage(damageable.url, damageable)
    damage.cut_short(key_row(damage, info.key_id, ApiKey.KeyRevoked))
    damage.close()

    # Then the key is refused: a revocation that cannot be read is never taken for none
    with pytest.raises(UnknownKeyError, match="its record in the store cannot be read"):
        keyring.authenticate(raw)


class _Later(datetime):
    """The keyring's clock, two days on."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return datetime.now(tz) + timedelta(days=2)


def test_a_key_stops_authenticating_at_its_expiry(keyring, monkeypatch):
    expiry = datetime.now(UTC) + timedelta(days=1)
    info, raw = keyring.create("rita", "reviewer", expires_at=expiry)
    assert keyring.authenticate(raw).id == "rita"
    assert (info.expires_at, info.valid) == (expiry, True)
    [created] = keyring.store.events.get(key_uuid(info.key_id))
    assert created.expires_at == expiry.isoformat()

    monkeypatch.setattr("domain.access.keyring.datetime", _Later)
    with pytest.raises(KeyExpiredError, match="expired at") as refused:
        keyring.authenticate(raw)
    assert refused.value.reason == "expired_key"
    [listed] = keyring.list()
    assert not listed.valid


@pytest.mark.parametrize(
    "expiry",
    [datetime.now(UTC) - timedelta(minutes=1), datetime(2099, 1, 1)],  # past; no time zone
)
def test_an_expiry_in_the_past_or_without_a_zone_is_refused_recording_nothing(
    keyring, store, expiry
):
    with pytest.raises(InvalidKeyExpiryError):
        keyring.create("rita", "reviewer", expires_at=expiry)
    assert keyring.list() == []


# -- custom roles, authority scope and attestation -----------------------------


def test_a_custom_role_is_refused_until_it_is_on_record_then_a_key_may_have_it(keyring, store):
    # Given no custom role on record: a manager's key is refused, listing the roles known
    with pytest.raises(InvalidRoleError, match=r"use one of agent, reviewer, auditor, admin$"):
        keyring.create("maya", "manager")

    # When a manager role is recorded
    record_roles(store, custom_roles({"manager": {"permissions": ["decide"]}}), ADMIN)

    # Then a key may have it
    _, raw = keyring.create("maya", "manager")
    assert keyring.authenticate(raw).role == "manager"
    with pytest.raises(InvalidRoleError, match=r"admin, manager$"):
        keyring.create("maya", "boss")


def test_a_key_with_a_scope_and_an_attestation_carries_them_on_its_actor(keyring):
    # When
    info, raw = keyring.create(
        "maya",
        "reviewer",
        graphs=["refund", "refund"],
        max_amount=500,
        attestation_text=" Refund training 2026 ",
        attested_on=date(2026, 1, 15),
    )

    # Then the key records them, and its principal's actor shows them on what it does
    assert info.scope == KeyScope(graphs=("refund",), max_amount=500)
    assert info.attestation == Attestation("Refund training 2026", "2026-01-15")
    actor = keyring.authenticate(raw).as_actor()
    assert actor["scope"] == {"graphs": ["refund"], "max_amount": 500}
    assert actor["attestation"] == {"text": "Refund training 2026", "attested_on": "2026-01-15"}
    assert keyring.get(info.key_id) == info


def test_a_key_without_scope_or_attestation_has_an_actor_as_before(keyring):
    _, raw = keyring.create("rita", "reviewer")

    assert keyring.authenticate(raw).as_actor() == {
        "id": "rita",
        "role": "reviewer",
        "authenticated": True,
        "via": "api_key",
    }


@pytest.mark.parametrize(
    ("scope", "says"),
    [
        ({"graphs": []}, "at least one graph"),
        ({"graphs": ["refund", " "]}, "none blank"),
        ({"max_amount": -1}, "0 or more"),
        ({"max_amount": float("nan")}, "finite number"),
        ({"attestation_text": "Training"}, "its text and its date, both"),
        ({"attested_on": date(2026, 1, 1)}, "its text and its date, both"),
        ({"attestation_text": " ", "attested_on": date(2026, 1, 1)}, "printable characters"),
        ({"attestation_text": "T", "attested_on": date.today() + timedelta(days=1)}, "future"),
    ],
)
def test_a_bad_scope_or_attestation_is_refused_and_nothing_is_recorded(keyring, store, scope, says):
    before = head(store)

    with pytest.raises(InvalidKeyScopeError, match=says):
        keyring.create("maya", "reviewer", **scope)

    assert head(store) == before


def test_a_key_recorded_before_scopes_reads_without_them(store):
    # Given a KeyCreated as recorded before scopes and attestations existed
    key = ApiKey(
        key_id="0123456789ab",
        principal_id="old",
        role="reviewer",
        digest="0" * 64,
        actor=None,
        note=None,
    )
    [created] = key.collect_events()
    stored = store.mapper.to_stored_event(created)
    state = store.mapper.transcoder.decode(stored.state)
    assert (state["scope"], state["attestation"]) == (None, None)
    del state["scope"], state["attestation"]
    old = dataclasses.replace(stored, state=store.mapper.transcoder.encode(state))

    # When it is read, then it is a key with neither
    folded = fold_events(None, [store.mapper.to_domain_event(old)])
    assert (folded.scope, folded.attestation) == (None, None)
    assert (key_info(folded).scope, key_info(folded).attestation) == (None, None)
    assert "scope" not in folded.principal().as_actor()
