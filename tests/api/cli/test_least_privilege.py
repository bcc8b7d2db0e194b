"""Every `holdpoint` process as a PostgreSQL role with exactly the README's grants.

The owner runs `holdpoint db init` on a schema of the test's own; a second,
real login role gets the GRANT statements of README.md's "A least-privilege
role for the server" (and nothing else), and every process runs as it, as a
subprocess, on `?create_tables=no`: serve (with and without its projector),
projector, worker and every other command of `holdpoint --help`. A role that
lacks any one of those grants gets one line naming it and the GRANT that
gives it, exit status 2, before it does anything. (The store's own grants,
each shown necessary for appending: tests/persistence/test_least_privilege.py.)
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from psycopg import sql

from api.cli.main import build_parser
from domain.record.store import open_store
from projections.privileges import TablesNotReadyError
from projections.runner import ProjectionRunner
from projections.thread_index import ThreadIndexProjection
from tests.cli_process import REPO, holdpoint
from tests.serving import Serving

pytestmark = pytest.mark.postgres

README = REPO / "README.md"
README_ROLE, README_SCHEMA = "holdpoint_app", "public"
WAIT = 60.0


def readme_grants() -> list[str]:
    """The GRANT statements of the README's least-privilege section, one per line."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### A least-privilege role for the server\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sql\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def printed_grants(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("GRANT ")]


def for_schema(grants: list[str], schema: str, role: str) -> list[str]:
    """The README's statements (schema public, role holdpoint_app) for `schema` and `role`."""
    return [
        grant.replace(f"SCHEMA {README_SCHEMA} ", f"SCHEMA {schema} ")
        .replace(f" {README_SCHEMA}.", f" {schema}.")
        .replace(f" TO {README_ROLE};", f" TO {role};")
        for grant in grants
    ]


@dataclass(frozen=True)
class Schema:
    """A schema whose tables `holdpoint db init` made, as the owner (the test's role)."""

    owner_url: str
    name: str
    init_output: str

    def url_as(self, role: Role) -> str:
        parts = urlsplit(self.owner_url)
        return (
            f"postgresql://{role.name}:{role.password}@{parts.hostname}:{parts.port or 5432}"
            f"{parts.path}?schema={self.name}&create_tables=no"
        )

    def owner(self) -> psycopg.Connection[Any]:
        parts = urlsplit(self.owner_url)
        return psycopg.connect(
            host=parts.hostname,
            port=parts.port or 5432,
            dbname=parts.path.lstrip("/"),
            user=parts.username,
            password=parts.password,
            autocommit=True,
        )

    def table(self, name: str) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.name), sql.Identifier(name))


@dataclass(frozen=True)
class Role:
    name: str
    password: str


@pytest.fixture
def schema(postgres_url: str) -> Schema:
    """Given a schema set up by `holdpoint db init`, run by the owner."""
    done = holdpoint(postgres_url, "db", "init")
    assert done.returncode == 0, done.stderr
    name = postgres_url.rpartition("schema=")[2]
    return Schema(postgres_url, name, done.stdout)


@pytest.fixture
def make_role(schema: Schema) -> Iterator[Any]:
    """Login roles (random names) with the given README grants; revoked and dropped after."""
    made: list[tuple[Role, list[str]]] = []

    def make(grants: list[str]) -> Role:
        role = Role(f"holdpoint_test_{uuid.uuid4().hex[:10]}", secrets.token_hex(16))
        statements = for_schema(grants, schema.name, role.name)
        with schema.owner() as owner:
            owner.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role.name), sql.Literal(role.password)
                )
            )
            made.append((role, statements))
            for statement in statements:
                owner.execute(statement.encode())
        return role

    yield make
    with schema.owner() as owner:
        for role, statements in made:
            for statement in statements:
                revoke = statement.replace("GRANT", "REVOKE", 1).replace(" TO ", " FROM ")
                owner.execute(revoke.encode())
            owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role.name)))


@pytest.fixture
def app_url(schema: Schema, make_role: Any) -> str:
    """The store URL of a role with exactly the README's grants."""
    return schema.url_as(make_role(readme_grants()))


def ok(url: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = run(url, *args, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def run(
    url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    if env is None:
        return holdpoint(url, *args)
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": url, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command prints, with status 2 and no traceback."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith("holdpoint: error: ")
    return line


# -- the README says what db init prints ------------------------------------------------


def test_the_readme_lists_exactly_the_grants_db_init_prints(schema):
    # When the owner runs `holdpoint db init` (default role) on the test's schema
    printed = printed_grants(schema.init_output)

    # Then its GRANT statements, for schema public, are the README's, in order
    assert printed
    assert for_schema(readme_grants(), schema.name, README_ROLE) == printed


def test_db_init_prints_the_grants_for_the_role_it_is_given(schema):
    done = holdpoint(schema.owner_url, "db", "init", "--role", "reporting")
    assert done.returncode == 0, done.stderr
    grants = printed_grants(done.stdout)
    assert grants == for_schema(readme_grants(), schema.name, "reporting")
    assert all(grant.endswith(" TO reporting;") for grant in grants)


# -- every process works as the role ------------------------------------------------------


@pytest.fixture
def recorded(app_url: str) -> str:
    """Given a refund thread recorded by `holdpoint demo`, run as the role; its id."""
    out = ok(app_url, "demo")
    assert "Chain verified" in out
    return re.search(r"thread (refund-[0-9a-f]+)", out).group(1)


# (command line, text its output must hold); {thread}, {key}, {tmp} are filled in
COMMANDS: dict[str, tuple[list[str], str]] = {
    "threads list": (["threads", "list"], "{thread}"),
    "threads show": (["threads", "show", "{thread}"], "{thread}"),
    "history": (["history", "{thread}"], "Thread {thread}"),
    "state": (["state", "{thread}"], "Thread {thread} at version"),
    "diff": (["diff", "{thread}", "1", "2"], "version 1 -> 2"),
    "fork": (["fork", "{thread}", "--version", "2", "--as", "forked-1"], "forked-1"),
    "replay": (["replay", "{thread}"], "Matches the record"),
    "keys create": (["keys", "create", "--principal", "rita", "--role", "reviewer"], "hp_"),
    "keys list": (["keys", "list"], "{key}"),
    "keys revoke": (["keys", "revoke", "{key}"], "{key}"),
    "verify": (["verify"], "OK"),
    "seal": (["seal"], "Sealed positions"),
    "export": (["export", "{thread}", "--out", "{tmp}/bundle.json"], "{thread}"),
    "report": (["report"], '"period"'),
    "projections status": (["projections", "status"], "thread_index"),
    "projections rebuild": (["projections", "rebuild"], "Rebuilt"),
    "sessions list": (["sessions", "list"], "0 sessions"),
    "sessions revoke": (["sessions", "revoke", "--key", "{key}"], "of key {key}"),
}
# Covered by the tests below them: long-running processes, the owner's command, the demo,
# and the record's life, run in order (a policy or a hold made, then retired or lifted).
# `erase` is the owner's too (it deletes a key and snapshots, and vacuums):
# tests/api/cli/test_erasure.py.
RECORD_LIFE = {
    "retention set", "retention retire", "retention list", "retention apply",
    "hold place", "hold lift", "hold list", "incident open", "incident close", "incident list",
}  # fmt: skip
OTHER_COMMANDS = {"serve", "projector", "worker", "db init", "demo", "erase", *RECORD_LIFE}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands, by name, as `--help` lists them."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse keeps them there alone
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def test_every_command_of_the_help_is_run_as_the_role_here():
    names = set()
    for name, parser in subcommands(build_parser()).items():
        nested = subcommands(parser)
        names |= {f"{name} {sub}" for sub in nested} if nested else {name}
    assert names - set(COMMANDS) - OTHER_COMMANDS == set()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_works_as_the_role(app_url, recorded, tmp_path, command):
    # Given a recorded thread, a key made by the role and a seal key, as the command needs
    args, expected = COMMANDS[command]
    filled = {"thread": recorded, "tmp": str(tmp_path), "key": ""}
    if "{key}" in " ".join(args) + expected:
        made = ok(app_url, "keys", "create", "--principal", "amy", "--role", "agent")
        filled["key"] = re.search(r"Created key (\S+) ", made).group(1)
    env = None
    if command == "seal":
        ok(app_url, "seal", "--init-key", str(tmp_path / "seal.key"))
        env = {"HOLDPOINT_SEAL_KEY": str(tmp_path / "seal.key")}

    # When the command runs as the role
    out = ok(app_url, *(arg.format(**filled) for arg in args), env=env)

    # Then it did its work
    assert expected.format(**filled) in out


def test_the_records_life_works_as_the_role_but_a_purge_is_the_owners(
    schema, app_url, recorded, tmp_path
):
    # Given a seal key; then each command of the record's life, as the role (a purge's
    # plan too; the purge itself is the owner's: the next test)
    ok(app_url, "seal", "--init-key", str(tmp_path / "seal.key"))
    env = {"HOLDPOINT_SEAL_KEY": str(tmp_path / "seal.key")}
    assert "in force" in ok(app_url, "retention", "set", "std", "--scope", "all", "--days",
                            "400", "--reason", "schedule 4.2")  # fmt: skip
    assert "std" in ok(app_url, "retention", "list")
    assert "Would purge 0 thread(s)." in ok(app_url, "retention", "apply", "--dry-run")
    assert "retired" in ok(app_url, "retention", "retire", "std", "--reason", "superseded")
    assert "Placed hold-1" in ok(app_url, "hold", "place", "--scope", "graph:refund",
                                 "--reason", "case 17")  # fmt: skip
    assert "hold-1" in ok(app_url, "hold", "list")
    opened = ok(app_url, "incident", "open", "--thread", recorded, "--reason", "paid twice",
                "--out", str(tmp_path / "incident"), env=env)  # fmt: skip
    assert "Opened incident-1" in opened
    assert "Closed incident-1" in ok(app_url, "incident", "close", "incident-1",
                                     "--outcome", "reversed")  # fmt: skip
    assert "closed (reversed)" in ok(app_url, "incident", "list")
    assert "Lifted hold-1" in ok(app_url, "hold", "lift", "hold-1", "--reason", "case closed")


def test_a_purge_as_the_role_is_refused_before_anything_is_recorded(
    schema, app_url, recorded, tmp_path
):
    # Given a seal key, and the owner, who may purge
    ok(app_url, "seal", "--init-key", str(tmp_path / "seal.key"))
    env = {"HOLDPOINT_SEAL_KEY": str(tmp_path / "seal.key")}
    with open_store(schema.owner_url) as store:
        head = store.recorder.max_notification_id()
        assert store.recorder.may_purge() is None  # type: ignore[attr-defined]
    # When the role applies retention
    done = run(app_url, "retention", "apply", env=env)
    # Then it is refused at once, naming the fix, and nothing was sealed or recorded
    assert done.returncode == 2
    assert "may not purge" in done.stderr
    assert "as the role that owns the tables" in done.stderr
    with open_store(schema.owner_url) as store:
        assert store.recorder.max_notification_id() == head


def test_db_init_as_the_role_is_one_line(app_url):
    line = one_line_error(run(app_url, "db", "init"))
    assert "permission denied" in line


def test_a_rebuild_as_the_role_refills_the_read_models_and_keeps_their_indexes(
    schema, app_url, recorded
):
    def indexes_and_rows() -> tuple[set[str], int]:
        with schema.owner() as owner:
            rows = owner.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (schema.name,)
            ).fetchall()
            count = owner.execute(
                sql.SQL("SELECT count(*) FROM {}").format(schema.table("holdpoint_threads"))
            ).fetchone()[0]
        return {name for (name,) in rows}, count

    ok(app_url, "projections", "status")
    ok(app_url, "threads", "list")  # caught up: the thread is indexed
    before = indexes_and_rows()
    assert before[1] == 1

    out = ok(app_url, "projections", "rebuild")

    assert "Rebuilt" in out
    assert indexes_and_rows() == before  # the role may not drop an index: none is dropped


# -- long-running processes ---------------------------------------------------------------


class Background:
    """A long-running `holdpoint` subprocess whose stderr (its JSON log) is read line by line."""

    def __init__(self, url: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "api.cli.main", *args],
            cwd=REPO,
            env={**os.environ, "HOLDPOINT_STORE": url},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")

    def wait_for(self, event: str) -> dict[str, Any]:
        """The first log line whose event is `event`."""
        while True:
            line = self.lines.get(timeout=WAIT)
            self.seen.append(line)
            if line == "" and self.process.poll() is not None:
                pytest.fail(f"the process ended: {self.seen}")
            if line.startswith("{") and json.loads(line).get("event") == event:
                return json.loads(line)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=WAIT)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.process.returncode


@contextmanager
def background(url: str, *args: str) -> Iterator[Background]:
    process = Background(url, *args)
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.stop()


def refund_cycle(url: str, keys: dict[str, str]) -> dict[str, Any]:
    """The banner's refund story over HTTP: ask, pause, decide, join; the run's output."""
    agent = {"x-api-key": keys["agent"]}
    reviewer = {"x-api-key": keys["reviewer"]}
    with httpx.Client(base_url=url, timeout=WAIT) as http:
        created = http.post(
            "/threads",
            headers=agent,
            json={"thread_id": "refund-1", "metadata": {"graph_id": "refund"}},
        )
        assert created.status_code == 200, created.text
        paused = http.post(
            "/threads/refund-1/runs/wait",
            headers=agent,
            json={"assistant_id": "refund", "input": {"refund_amount": 250}},
        ).json()
        interrupt_id = paused["__interrupt__"][0]["id"]
        queue_page = http.get("/approvals", headers=reviewer).json()
        assert interrupt_id in {row["interrupt_id"] for row in queue_page["data"]}
        decided = http.post(
            f"/approvals/{interrupt_id}/decision",
            headers=reviewer,
            json={"decision": "approve", "reason": "Receipt checked"},
        )
        assert decided.status_code == 200, decided.text
        joined = http.get(f"/threads/refund-1/runs/{decided.json()['run_id']}/join", headers=agent)
        return dict(joined.json())


def make_key(url: str, principal: str, role: str) -> str:
    """A key made by `holdpoint keys create` (its last line), as the store's role."""
    return ok(url, "keys", "create", "--principal", principal, "--role", role).splitlines()[-1]


@pytest.mark.parametrize("projector", ["in-process", "no-projector"])
def test_serve_as_the_role_is_ready_and_runs_a_refund_cycle(app_url, projector):
    keys = {"agent": make_key(app_url, "agent-1", "agent")}
    keys["reviewer"] = make_key(app_url, "reviewer-1", "reviewer")
    with background(app_url, "projector") if projector == "no-projector" else _nothing() as side:
        # When `holdpoint serve` starts as the role (its projector elsewhere, or its own)
        args = ["--no-projector"] if projector == "no-projector" else []
        server = Serving(app_url, *args)
        try:
            [docs] = [line for line in server.banner("  API docs:") if "API docs:" in line]
            url = docs.split()[-1].removesuffix("/docs")

            # Then it is ready, and a refund runs from request to decision
            ready = httpx.get(f"{url}/readyz", timeout=WAIT)
            assert ready.status_code == 200, ready.text
            assert ready.json()["status"] == "ready"
            assert refund_cycle(url, keys)["outcome"] == "Refund of $250 processed."
        finally:
            code, stderr = server.stop()
        assert code == 0, stderr
        assert "Traceback" not in stderr
        if side is not None:
            assert side.stop() == 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def test_the_projector_as_the_role_catches_up(schema, app_url, recorded):
    # Given a recorded thread the read models have not applied
    head = _head(schema)
    assert _positions(schema) == {0}

    # When `holdpoint projector` runs as the role
    with background(app_url, "projector") as projector:
        projector.wait_for("projector started")
        deadline = time.monotonic() + WAIT
        while _positions(schema) != {head}:  # a condition, not a guess at how long it takes
            assert time.monotonic() < deadline, "the projector did not catch up"
            time.sleep(0.05)

        # Then it applied the log, and stops cleanly
        assert projector.stop() == 0
    assert not [entry for entry in _log(projector.seen) if entry.get("level") == "error"]


def test_the_worker_as_the_role_starts_and_stops_cleanly(app_url):
    with background(app_url, "worker") as worker:
        started = worker.wait_for("worker started")
        assert started["runner"]
        assert worker.stop() == 0
    assert "worker stopped" in {entry.get("event") for entry in _log(worker.seen)}


def _log(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.startswith("{")]


def _head(schema: Schema) -> int:
    with schema.owner() as owner:
        query = sql.SQL("SELECT max(notification_id) FROM {}").format(
            schema.table("holdpoint_events")
        )
        return int(owner.execute(query).fetchone()[0])


def _positions(schema: Schema) -> set[int]:
    with schema.owner() as owner:
        query = sql.SQL("SELECT position FROM {}").format(
            schema.table("holdpoint_projection_positions")
        )
        return {int(position) for (position,) in owner.execute(query).fetchall()}


# -- a grant missing is one line naming it --------------------------------------------------


def _grant_id(grant: str) -> str:
    """The object a GRANT is on, for a test id: `holdpoint_events`, `lp` (a schema)..."""
    on = grant.partition(" ON ")[2].partition(" TO ")[0]
    return on.rpartition(".")[2].partition("(")[0].removeprefix("SCHEMA ")


@pytest.mark.parametrize(
    "missing", range(len(readme_grants())), ids=[_grant_id(g) for g in readme_grants()]
)
def test_a_role_without_one_grant_is_told_which_one_and_how_to_give_it(schema, make_role, missing):
    # Given a role with every grant of the README but one
    grants = readme_grants()
    role = make_role([grant for i, grant in enumerate(grants) if i != missing])
    lacking = for_schema([grants[missing]], schema.name, role.name)[0]

    # When the worker (which checks every table beside the events) starts as it
    line = one_line_error(run(schema.url_as(role), "worker"))

    # Then the one line names what is missing and how to give it
    privileges, on = lacking.removeprefix("GRANT ").split(" TO ")[0].split(" ON ")
    if on.startswith("SCHEMA "):
        assert f"the role {role.name} lacks USAGE on the schema {schema.name}" in line
    else:
        assert f"the role {role.name} lacks {privileges} on {on.removeprefix('FUNCTION ')}" in line
    assert f"GRANT {privileges} ON {on} TO {role.name}" in line


@pytest.mark.parametrize(
    ("command", "table"),
    [
        (["serve", "--port", "0"], "holdpoint_runs"),
        (["serve", "--port", "0", "--no-projector"], "holdpoint_ui_sessions"),
        (["projector"], "holdpoint_threads"),
        (["threads", "list"], "holdpoint_projection_positions"),
        (["report"], "holdpoint_interrupt_log"),
    ],
    ids=["serve", "serve-no-projector", "projector", "threads-list", "report"],
)
def test_each_process_kind_stops_at_start_on_a_missing_grant(schema, make_role, command, table):
    grants = readme_grants()
    role = make_role([grant for grant in grants if f".{table} " not in grant])

    line = one_line_error(run(schema.url_as(role), *command))

    assert "lacks SELECT" in line
    assert f"{schema.name}.{table}" in line


# -- an upgrade that changes a read model's shape --------------------------------------------


class ThreadIndexOfANewShape(ThreadIndexProjection):
    version = ThreadIndexProjection.version + 1


def test_a_read_model_of_another_version_waits_for_db_init_by_the_owner(schema, make_role):
    # Given code whose thread index is of a newer shape than the store's tables
    role = make_role(readme_grants())
    new = ThreadIndexOfANewShape()

    # When a runner starts as the role, then it names db init and changes nothing
    with open_store(schema.url_as(role)) as store, pytest.raises(TablesNotReadyError) as refused:
        ProjectionRunner(store, [new])
    assert "'thread_index' has tables of version 1, this code's are of version 2" in str(
        refused.value
    )
    assert "holdpoint db init" in str(refused.value)

    # And once the owner's setup has rebuilt it (new tables: their grants given again, as
    # `db init` prints them), the role's runner starts on it
    with open_store(schema.owner_url) as owner_store:
        ProjectionRunner(owner_store, [new]).close()
    with open_store(schema.url_as(role)) as store, pytest.raises(TablesNotReadyError) as lost:
        ProjectionRunner(store, [new])
    assert "lacks SELECT, INSERT, UPDATE, DELETE, TRUNCATE on" in str(lost.value)
    with schema.owner() as owner:
        for grant in for_schema(readme_grants(), schema.name, role.name):
            owner.execute(grant.encode())
    with open_store(schema.url_as(role)) as store:
        runner = ProjectionRunner(store, [new])
        assert [status.name for status in runner.status()] == ["thread_index"]
        runner.close()
