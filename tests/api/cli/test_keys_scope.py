"""`holdpoint keys create` with a custom role, an authority scope and an attestation, run
for real: a subprocess on a SQLite file, read back by a keyring on the same file."""

from __future__ import annotations

from domain.access.identity import parse_key
from domain.access.keyring import Keyring
from domain.access.role_catalogue import RoleCatalogue
from domain.record.store import open_store
from tests.api.cli.test_keys import ok, refused

ROLES = '[roles.manager]\npermissions = ["read", "queue", "decide"]\n'


def test_a_custom_role_needs_the_config_that_names_it_and_is_recorded_once(sqlite_url, tmp_path):
    # Given a holdpoint.toml with a manager role
    config = tmp_path / "holdpoint.toml"
    config.write_text(ROLES)

    # When a manager's key is asked for without it, then with it, twice
    unknown = refused(sqlite_url, "keys", "create", "--principal", "maya", "--role", "manager")
    first = ok(sqlite_url, "keys", "create", "--principal", "maya", "--role", "manager",
               "--config", str(config))  # fmt: skip
    second = ok(sqlite_url, "keys", "create", "--principal", "max", "--role", "manager",
                "--config", str(config))  # fmt: skip

    # Then it was refused listing the roles known, then made, the roles recorded once
    assert unknown == (
        "holdpoint: error: Unknown role 'manager': use one of agent, reviewer, auditor, admin"
    )
    assert first[0] == f"Recorded the roles of {config}: agent, reviewer, auditor, admin, manager."
    assert not second[0].startswith("Recorded")
    with open_store(sqlite_url) as store:
        assert Keyring(store).authenticate(first[-1]).role == "manager"
        [configured] = store.events.get(RoleCatalogue.create_id())
    assert configured.roles == {"manager": ["read", "decide", "queue"]}
    # and once on record, the role needs no config
    ok(sqlite_url, "keys", "create", "--principal", "mia", "--role", "manager")


def test_a_config_with_an_unknown_permission_is_refused_naming_it(sqlite_url, tmp_path):
    config = tmp_path / "holdpoint.toml"
    config.write_text('[roles.manager]\npermissions = ["read", "aprove"]\n')

    line = refused(sqlite_url, "keys", "create", "--principal", "maya", "--role", "manager",
                   "--config", str(config))  # fmt: skip

    assert line.startswith(f"holdpoint: error: In the config file {config}: Role 'manager' ")
    assert "unknown permission 'aprove'" in line


def test_a_key_with_scope_and_attestation_says_so_and_lists_them(sqlite_url):
    made = ok(sqlite_url, "keys", "create", "--principal", "maya", "--role", "reviewer",
              "--graphs", "refund,payout", "--max-amount", "500",
              "--attestation", "Refund training 2026", "--attested-on", "2026-11-01")  # fmt: skip

    details = "graphs: refund, payout; max amount: 500; attested: Refund training 2026 (2026-11-01)"
    assert made[1] == f"  {details}"
    listing = ok(sqlite_url, "keys", "list")
    assert listing[1].split()[:3] == [parse_key(made[-1])[0], "maya", "reviewer"]
    assert listing[2] == f"  {details}"
    assert listing[-1] == "1 keys, 1 active"
    with open_store(sqlite_url) as store:
        actor = Keyring(store).authenticate(made[-1]).as_actor()
    assert actor["scope"] == {"graphs": ["refund", "payout"], "max_amount": 500.0}


def test_an_attestation_without_its_date_is_refused_and_nothing_is_made(sqlite_url):
    line = refused(sqlite_url, "keys", "create", "--principal", "maya", "--role", "reviewer",
                   "--attestation", "Refund training 2026")  # fmt: skip

    assert line == "holdpoint: error: A competence attestation needs its text and its date, both"
    assert ok(sqlite_url, "keys", "list")[-1] == "0 keys, 0 active"
