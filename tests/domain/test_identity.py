"""Identity, pure: the API key format, its digest, and the key and refusal aggregates.

Aggregate tests read given events, when one command, then the new events
(`collect_events()`) or an error, without a store.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from eventsourcing.utils import get_topic
from hypothesis import given
from hypothesis import strategies as st

from domain.access.identity import (
    REFUSAL_REASONS,
    ROLES,
    ApiKey,
    KeyringBootstrap,
    Principal,
    RefusedAttempt,
    check_principal_id,
    check_role,
    digest_matches,
    format_key,
    is_key_id,
    key_digest,
    key_uuid,
    new_key,
    parse_key,
)
from domain.errors import (
    InvalidPrincipalError,
    InvalidRoleError,
    KeyAlreadyRevokedError,
)

ADMIN = {"id": "ada", "role": "admin"}
KEY_ID = "0123456789ab"
SECRET = "s" * 43
RAW_KEY = re.compile(r"^hp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$")


def created_key(key_id: str = KEY_ID) -> ApiKey:
    return ApiKey(
        key_id=key_id,
        principal_id="rita",
        role="reviewer",
        digest=key_digest(SECRET),
        actor=ADMIN,
        note="on call",
    )


# -- the key format ----------------------------------------------------------


def test_a_new_key_is_hp_then_a_12_hex_id_then_a_url_safe_secret():
    key_id, secret = new_key()
    raw = format_key(key_id, secret)

    assert RAW_KEY.match(raw), raw
    assert parse_key(raw) == (key_id, secret)


def test_new_keys_differ():
    assert len({format_key(*new_key()) for _ in range(100)}) == 100


def test_a_secret_may_contain_underscores_and_still_parses():
    secret = "_a-b_" + "x" * 38
    assert parse_key(f"hp_{KEY_ID}_{secret}") == (KEY_ID, secret)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        " ",
        b"hp_0123456789ab_" + b"s" * 43,
        42,
        f"hp_{KEY_ID}_{SECRET}\n",
        f" hp_{KEY_ID}_{SECRET}",
        f"HP_{KEY_ID}_{SECRET}",
        f"hp_{KEY_ID.upper()}_{SECRET}",
        f"hp_{KEY_ID[:-1]}g_{SECRET}",
        f"hp_{KEY_ID}-{SECRET}",
        f"hp_{KEY_ID}_{SECRET[:-1]}",
        f"hp_{KEY_ID}_{SECRET}s",
        f"hp_{KEY_ID}_{SECRET[:-1]}=",
        f"hp_{KEY_ID}_{SECRET[:-1]}é",
        f"Bearer hp_{KEY_ID}_{SECRET}",
        "hp_" + "a" * 100_000,
    ],
    ids=repr,
)
def test_a_malformed_key_parses_to_none(raw):
    assert parse_key(raw) is None


@given(st.text(max_size=80))
def test_parsing_never_raises(text):
    parsed = parse_key(text)

    assert parsed is None or format_key(*parsed) == text


def test_a_key_id_is_12_lowercase_hex_digits():
    assert is_key_id(KEY_ID)
    assert not is_key_id(KEY_ID.upper())
    assert not is_key_id(KEY_ID + "0")
    assert not is_key_id("")


def test_only_the_sha256_of_the_secret_is_kept_and_it_is_compared_exactly():
    digest = key_digest(SECRET)

    assert digest == hashlib.sha256(SECRET.encode()).hexdigest()
    assert SECRET not in digest
    assert digest_matches(SECRET, digest)
    assert not digest_matches(SECRET[:-1] + "t", digest)


def test_a_principal_acts_as_its_id_and_role():
    principal = Principal(id="rita", role="reviewer", key_id=KEY_ID)

    assert principal.as_actor() == {
        "id": "rita",
        "role": "reviewer",
        "authenticated": True,
        "via": "api_key",
    }


# -- validation --------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_four_roles_are_accepted(role):
    assert check_role(role) == role


@pytest.mark.parametrize("role", ["", "Admin", "root", "reviewer "])
def test_an_unknown_role_is_refused_naming_the_roles(role):
    with pytest.raises(InvalidRoleError, match="use one of agent, reviewer, auditor, admin"):
        check_role(role)


@pytest.mark.parametrize(
    ("principal_id", "problem"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("x" * 129, "has 129 characters; at most 128"),
        ("rita\n", "printable"),
        ("ri\x00ta", "printable"),
        (" rita", "leading or trailing spaces"),
    ],
)
def test_a_principal_id_must_be_1_to_128_printable_characters(principal_id, problem):
    with pytest.raises(InvalidPrincipalError, match=problem):
        check_principal_id(principal_id)


def test_a_principal_id_may_be_an_email_or_have_inner_spaces():
    assert check_principal_id("rita.lopez@example.com") == "rita.lopez@example.com"
    assert check_principal_id("Rita López") == "Rita López"
    assert check_principal_id("x" * 128) == "x" * 128


# -- the ApiKey aggregate ----------------------------------------------------


def test_creating_a_key_records_key_created_with_the_digest_not_the_secret():
    # When
    key = created_key()

    # Then
    [event] = key.collect_events()
    assert isinstance(event, ApiKey.KeyCreated)
    assert event.originator_id == key_uuid(KEY_ID) == key.id
    assert (event.key_id, event.principal_id, event.role) == (KEY_ID, "rita", "reviewer")
    assert (event.actor, event.note) == (ADMIN, "on call")
    assert event.digest == key_digest(SECRET)
    assert SECRET not in repr(event.__dict__)
    assert key.principal() == Principal(id="rita", role="reviewer", key_id=KEY_ID)
    assert not key.revoked


def test_a_key_s_aggregate_id_is_derived_from_its_key_id():
    assert key_uuid(KEY_ID) == key_uuid(KEY_ID)
    assert key_uuid(KEY_ID) != key_uuid("ba9876543210")


def test_revoking_a_key_records_key_revoked_with_who_and_why():
    # Given
    key = created_key()
    key.collect_events()

    # When
    key.revoke(actor=ADMIN, reason="left the team")

    # Then
    [event] = key.collect_events()
    assert isinstance(event, ApiKey.KeyRevoked)
    assert (event.actor, event.reason, event.originator_version) == (ADMIN, "left the team", 2)
    assert key.revoked
    assert (key.revoked_at, key.revoked_by, key.revoke_reason) == (
        event.timestamp,
        ADMIN,
        "left the team",
    )


def test_a_revoked_key_cannot_be_revoked_again():
    # Given
    key = created_key()
    key.revoke(actor=ADMIN, reason=None)
    key.collect_events()

    # When / Then
    with pytest.raises(KeyAlreadyRevokedError, match=r"already revoked at .* by ada"):
        key.revoke(actor=None, reason="again")
    assert key.collect_events() == []


def test_a_key_folds_back_from_its_events():
    # Given
    key = created_key()
    key.revoke(actor=None, reason="lost")
    events = key.collect_events()

    # When
    folded = None
    for event in events:
        folded = event.mutate(folded)

    # Then
    assert folded is not None
    assert (folded.key_id, folded.digest, folded.revoke_reason) == (KEY_ID, key.digest, "lost")
    assert folded.revoked_by is None
    assert folded.version == 2


# -- refused attempts --------------------------------------------------------


def test_a_refusal_is_one_access_refused_event_with_who_what_and_why():
    # When
    attempt = RefusedAttempt.refuse(
        principal=Principal(id="amy", role="agent", key_id=KEY_ID),
        action="POST /approvals/{interrupt_id}/decision",
        target="i-1",
        reason="wrong_role",
        message="deciding needs the reviewer role",
    )

    # Then
    [event] = attempt.collect_events()
    assert isinstance(event, RefusedAttempt.AccessRefused)
    assert (event.principal_id, event.role, event.reason) == ("amy", "agent", "wrong_role")
    assert event.action == "POST /approvals/{interrupt_id}/decision"
    assert (event.target, event.message) == ("i-1", "deciding needs the reviewer role")


def test_an_anonymous_refusal_has_no_principal_and_each_refusal_its_own_id():
    first = RefusedAttempt.refuse(
        principal=None, action="GET /approvals", target=None, reason="no_key", message="no key"
    )
    second = RefusedAttempt.refuse(
        principal=None, action="GET /approvals", target=None, reason="no_key", message="no key"
    )

    assert (first.principal_id, first.role, first.target) == (None, None, None)
    assert first.id != second.id


def test_a_refusal_keeps_caller_supplied_text_short():
    attempt = RefusedAttempt.refuse(
        principal=None, action="GET /" + "a" * 5000, target="t" * 5000, reason="no_key", message="m"
    )

    assert len(attempt.action) == 300
    assert attempt.target is not None
    assert len(attempt.target) == 300
    assert attempt.action.endswith("…")


def test_a_refusal_reason_must_be_a_known_code():
    with pytest.raises(ValueError, match="Unknown refusal reason 'bored'"):
        RefusedAttempt.refuse(
            principal=None, action="GET /", target=None, reason="bored", message=""
        )
    assert "separation_of_duties" in REFUSAL_REASONS


# -- events are a permanent contract ------------------------------------------

IDENTITY_TOPICS = {
    "domain.identity:ApiKey.KeyCreated",
    "domain.identity:ApiKey.KeyRevoked",
    "domain.identity:KeyringBootstrap.KeysBootstrapped",
    "domain.identity:RefusedAttempt.AccessRefused",
}
IDENTITY_EVENTS = [
    ApiKey.KeyCreated,
    ApiKey.KeyRevoked,
    KeyringBootstrap.KeysBootstrapped,
    RefusedAttempt.AccessRefused,
]


def test_identity_events_keep_their_recorded_topics_and_past_tense_names():
    assert {get_topic(cls) for cls in IDENTITY_EVENTS} == IDENTITY_TOPICS
    assert all(cls.__name__.endswith("ed") for cls in IDENTITY_EVENTS)
