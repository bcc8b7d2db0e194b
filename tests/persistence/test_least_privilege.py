"""PostgreSQL: the server runs as a role that can read, and append only through
the insert function; nobody can change or remove an event.

The store's own grants, as verified here, for a store in schema S
(`holdpoint_app` stands for the server's role):

    -- as the role that owns the tables, once: `holdpoint db init`
    -- (or open a store on S without create_tables=no)
    CREATE ROLE holdpoint_app LOGIN PASSWORD '...';
    GRANT USAGE ON SCHEMA S TO holdpoint_app;
    GRANT SELECT ON S.holdpoint_events, S.holdpoint_snapshots TO holdpoint_app;
    GRANT INSERT ON S.holdpoint_snapshots TO holdpoint_app;
    GRANT EXECUTE ON FUNCTION S.holdpoint_insert_events(uuid[], bigint[], text[], bytea[])
        TO holdpoint_app;

and the server opens `postgresql://holdpoint_app:...@host/db?schema=S&create_tables=no`.
These are the first lines of what `holdpoint db init --role holdpoint_app` prints
(one statement per object); the rest are the grants on the tables beside the
events (read models, runs, sessions...: `service/schema.py`), which every process
checks at start (tests/api/cli/test_least_privilege.py, with README.md's list).
No grant on the notification id sequence is needed (the insert
function, SECURITY DEFINER, draws ids with its owner's rights), and CONNECT
on the database is PUBLIC by default (grant it if it was revoked).
INSERT on the snapshots table is used once a thread passes 50 events. Each
grant is needed (`test_every_grant_in_the_list_is_needed`); the EXECUTE grant
is only meaningful once the function's default EXECUTE for PUBLIC is revoked
(`test_a_role_without_the_execute_grant_cannot_append_through_the_function`).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import parse_qsl, urlsplit

import psycopg
import pytest
from eventsourcing.persistence import PersistenceError
from psycopg import sql

from domain.graph import END, START, StateGraph
from domain.record.chain import verify_chain
from domain.record.store import StoreUnavailableError, open_store
from domain.types import Command, interrupt

pytestmark = pytest.mark.postgres

EVENTS = "holdpoint_events"
SNAPSHOTS = "holdpoint_snapshots"
INSERT_FUNCTION = "holdpoint_insert_events"
PURGE_FUNCTION = "holdpoint_purge_events"
PURGED = "holdpoint_purged"
AGENT = {"id": "agent-1", "role": "agent"}
REVIEWER = {"id": "reviewer-1", "role": "reviewer"}


@dataclass(frozen=True)
class Database:
    """Where the tables live, and how to reach them as one role or another."""

    owner_url: str  # the migration role's store URL, with ?schema=
    schema: str

    @property
    def parts(self) -> Any:
        return urlsplit(self.owner_url)

    def connect(self, user: str | None = None, password: str | None = None) -> psycopg.Connection:
        parts = self.parts
        return psycopg.connect(
            host=parts.hostname,
            port=parts.port or 5432,
            dbname=parts.path.lstrip("/"),
            user=user or parts.username,
            password=password or parts.password,
            autocommit=True,
        )

    def store_url(self, user: str, password: str) -> str:
        parts = self.parts
        return (
            f"postgresql://{user}:{password}@{parts.hostname}:{parts.port or 5432}"
            f"{parts.path}?schema={self.schema}&create_tables=no"
        )

    def table(self, name: str) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(name))

    def count_events(self) -> int:
        with self.connect() as owner:
            row = owner.execute(sql.SQL("SELECT count(*) FROM {}").format(self.table(EVENTS)))
            return int(row.fetchone()[0])


@dataclass(frozen=True)
class Role:
    name: str
    password: str


@pytest.fixture
def database(postgres_url: str) -> Database:
    """A schema whose tables the migration role (the test's own) has created."""
    open_store(postgres_url).close()
    schema = dict(parse_qsl(urlsplit(postgres_url).query))["schema"]
    return Database(postgres_url, schema)


RUNTIME_GRANTS = [
    "GRANT USAGE ON SCHEMA {schema} TO {role}",
    "GRANT SELECT ON {schema}.{events}, {schema}.{snapshots} TO {role}",
    "GRANT INSERT ON {schema}.{snapshots} TO {role}",
    "GRANT EXECUTE ON FUNCTION {schema}.{function}(uuid[], bigint[], text[], bytea[]) TO {role}",
]
READ_ONLY_GRANTS = RUNTIME_GRANTS[:2]  # an auditor's role: it reads, nothing else


@pytest.fixture
def make_role(database: Database) -> Iterator[Any]:
    """Create login roles (random names) with the given grants; drop them afterwards."""
    made: list[tuple[Role, list[str]]] = []

    def make(grants: list[str]) -> Role:
        role = Role(f"holdpoint_test_{uuid.uuid4().hex[:10]}", secrets.token_hex(16))
        with database.connect() as owner:
            owner.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(role.name), sql.Literal(role.password)
                )
            )
            made.append((role, grants))
            for grant in grants:
                owner.execute(grant_statement(grant, database.schema, role.name))
        return role

    yield make
    with database.connect() as owner:
        for role, grants in made:
            for grant in grants:
                revoke = grant.replace("GRANT", "REVOKE", 1).replace(" TO ", " FROM ")
                owner.execute(grant_statement(revoke, database.schema, role.name))
            owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role.name)))


def grant_statement(template: str, schema: str, role: str) -> sql.Composed:
    return sql.SQL(template).format(
        schema=sql.Identifier(schema),
        role=sql.Identifier(role),
        events=sql.Identifier(EVENTS),
        snapshots=sql.Identifier(SNAPSHOTS),
        function=sql.Identifier(INSERT_FUNCTION),
    )


@pytest.fixture
def runtime_role(make_role: Any) -> Role:
    return make_role(RUNTIME_GRANTS)


# -- graphs -----------------------------------------------------------------


class RefundState(TypedDict, total=False):
    refund_amount: float
    outcome: str


def check_and_process(state: RefundState) -> dict[str, str]:
    amount = state["refund_amount"]
    if amount > 100:
        approved = interrupt({"question": f"Approve a ${amount} refund?"})
        if not approved:
            return {"outcome": "Refund denied by reviewer."}
    return {"outcome": f"Refund of ${amount} processed."}


def refund_graph(store: Any) -> Any:
    builder = StateGraph(RefundState)
    builder.add_node("check_and_process", check_and_process)
    builder.add_edge(START, "check_and_process")
    builder.add_edge("check_and_process", END)
    return builder.compile(checkpointer=store, name="refund")


class CounterState(TypedDict):
    n: int


def counter_graph(store: Any, until: int) -> Any:
    builder = StateGraph(CounterState)
    builder.add_node("count", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "count")
    builder.add_conditional_edges("count", lambda state: "count" if state["n"] < until else END)
    return builder.compile(checkpointer=store, name="counter")


def config(thread_id: str, actor: dict[str, Any]) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "actor": actor}}


# -- the runtime role does its work -----------------------------------------


def test_the_runtime_role_runs_a_refund_from_request_to_decision(database, runtime_role):
    url = database.store_url(runtime_role.name, runtime_role.password)
    with open_store(url) as store:
        graph = refund_graph(store)
        paused = graph.invoke({"refund_amount": 250.0}, config("refund-1", AGENT))
        assert "__interrupt__" in paused
        resumed_config = config("refund-1", REVIEWER)
        resumed_config["configurable"]["decision"] = "approve"
        done = graph.invoke(Command(resume=True), resumed_config)
        assert done["outcome"] == "Refund of $250.0 processed."
        events = store.thread_events("refund-1")

    names = [type(event).__name__ for event in events]
    assert names[0] == "ThreadStarted"
    assert names[-1] == "ThreadCompleted"
    assert names.count("InterruptRaised") == names.count("InterruptResumed") == 1
    report = verify_chain(events, "refund-1")
    assert report.ok, report.problem
    assert database.count_events() == len(events)  # the owner sees what was appended


def test_the_runtime_role_takes_snapshots_of_a_long_thread(database, runtime_role):
    url = database.store_url(runtime_role.name, runtime_role.password)
    with open_store(url) as store:
        counter_graph(store, until=60).invoke({"n": 0}, config("long-1", AGENT))
    with database.connect() as owner:
        query = sql.SQL("SELECT count(*) FROM {}").format(database.table(SNAPSHOTS))
        assert owner.execute(query).fetchone()[0] >= 1
    with open_store(url) as store:  # read back through the snapshot, as the runtime role
        state = counter_graph(store, until=60).get_state(config("long-1", AGENT))
        assert state.values == {"n": 60}
        assert len(store.thread_events("long-1")) > 50


def do_the_servers_work(url: str) -> None:
    """Open the store, run a refund through its decision, and a long thread."""
    with open_store(url) as store:
        graph = refund_graph(store)
        graph.invoke({"refund_amount": 250.0}, config("refund-1", AGENT))
        graph.invoke(Command(resume=True), config("refund-1", REVIEWER))
        counter_graph(store, until=60).invoke({"n": 0}, config("long-1", AGENT))


@pytest.mark.parametrize(
    "missing", range(len(RUNTIME_GRANTS)), ids=["usage", "select", "insert", "execute"]
)
def test_every_grant_in_the_list_is_needed(database, make_role, missing):
    role = make_role([grant for i, grant in enumerate(RUNTIME_GRANTS) if i != missing])
    url = database.store_url(role.name, role.password)
    refused = "lacks USAGE on the schema" if missing == 0 else "permission denied"
    with pytest.raises((StoreUnavailableError, PersistenceError), match=refused):
        do_the_servers_work(url)


# -- nobody changes an event ------------------------------------------------


RAW_STATEMENTS = {
    "INSERT": "INSERT INTO {table} (originator_id, originator_version, topic, state) "
    "VALUES (gen_random_uuid(), 1, 'forged', '\\x00'::bytea)",
    "UPDATE": "UPDATE {table} SET topic = topic",
    "DELETE": "DELETE FROM {table}",
    "TRUNCATE": "TRUNCATE {table}",
}


def one_recorded_thread(database: Database) -> int:
    with open_store(database.owner_url) as store:
        refund_graph(store).invoke({"refund_amount": 50.0}, config("small-refund", AGENT))
    count = database.count_events()
    assert count > 0
    return count


@pytest.mark.parametrize("statement", list(RAW_STATEMENTS))
def test_the_runtime_role_cannot_write_the_events_table_directly(database, runtime_role, statement):
    count = one_recorded_thread(database)
    query = sql.SQL(RAW_STATEMENTS[statement]).format(table=database.table(EVENTS))
    with (
        database.connect(runtime_role.name, runtime_role.password) as connection,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"),
    ):
        connection.execute(query)
    assert database.count_events() == count


@pytest.mark.parametrize("statement", ["UPDATE", "DELETE", "TRUNCATE"])
def test_even_the_owner_cannot_change_or_remove_events(database, statement):
    count = one_recorded_thread(database)
    query = sql.SQL(RAW_STATEMENTS[statement]).format(table=database.table(EVENTS))
    with (
        database.connect() as owner,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
    ):
        owner.execute(query)
    assert database.count_events() == count


def test_a_role_without_the_execute_grant_cannot_append_through_the_function(database, make_role):
    """The insert function is SECURITY DEFINER: whoever may call it appends as the
    owner. A role granted only reading (an auditor's, a reporting tool's) must not."""
    count = one_recorded_thread(database)
    reader = make_role(READ_ONLY_GRANTS)
    query = sql.SQL(
        "SELECT * FROM {schema}.{function}(ARRAY[gen_random_uuid()], ARRAY[1::bigint], "
        "ARRAY['forged'], ARRAY['\\x00'::bytea])"
    ).format(schema=sql.Identifier(database.schema), function=sql.Identifier(INSERT_FUNCTION))
    with (
        database.connect(reader.name, reader.password) as connection,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"),
    ):
        connection.execute(query)
    assert database.count_events() == count


# -- purges: only the owner, only what a recorded purge names ---------------------------

PURGE_CALL = "SELECT {schema}.{function}(%s, 1, 1, ARRAY[%s]::uuid[], ARRAY[9223372036854775807])"


def purge_call(database: Database) -> sql.Composed:
    return sql.SQL(PURGE_CALL).format(
        schema=sql.Identifier(database.schema), function=sql.Identifier(PURGE_FUNCTION)
    )


def first_aggregate(database: Database) -> uuid.UUID:
    with database.connect() as owner:
        row = owner.execute(
            sql.SQL("SELECT originator_id FROM {} ORDER BY notification_id LIMIT 1").format(
                database.table(EVENTS)
            )
        ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


def test_the_runtime_role_can_neither_purge_nor_permit_a_delete(database, runtime_role):
    count = one_recorded_thread(database)
    thread = first_aggregate(database)
    permit = sql.SQL("INSERT INTO {} VALUES (%s, 9223372036854775807, 1)").format(
        database.table(PURGED)
    )
    for statement, params in ((purge_call(database), (thread, thread)), (permit, (thread,))):
        with (
            database.connect(runtime_role.name, runtime_role.password) as connection,
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"),
        ):
            connection.execute(statement, params)
    assert database.count_events() == count


def test_even_the_owner_purges_only_what_a_recorded_purge_names(database):
    # Given a thread, and a record (the thread's own first event) that names no purge
    count = one_recorded_thread(database)
    thread = first_aggregate(database)
    other = uuid.uuid4()
    # When the owner calls the purge function with it for another aggregate
    with (
        database.connect() as owner,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="only what a recorded purge"),
    ):
        owner.execute(purge_call(database), (thread, other))
    # Then nothing is deleted, and no delete was permitted
    assert database.count_events() == count
    with database.connect() as owner:
        permits = owner.execute(sql.SQL("SELECT count(*) FROM {}").format(database.table(PURGED)))
        assert permits.fetchone() == (0,)
