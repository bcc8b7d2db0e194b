"""The composition root: the objects one server process works with, built once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property

import structlog
from eventsourcing.postgres import PostgresAggregateRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder

from domain.access.actor import local_actor
from domain.access.keyring import Keyring
from domain.access.role_records import record_roles
from domain.oversight.policy_records import PolicyVersion
from domain.oversight.read_logs import ReadLogs
from domain.oversight.suspensions import Suspensions
from domain.record.application import UNDECODABLE, Workflows
from domain.record.langgraph_record import LANGGRAPH
from domain.record.store import backend_of, open_store, postgres_params
from domain.record.thread import WorkflowThread
from persistence.key_probe import PostgresKeyProbe, SQLiteKeyProbe
from projections.privileges import may_create_tables
from service import assistant_catalog
from service.assistant_catalog import Found
from service.cron_scheduler import CronScheduler
from service.errors import GraphNotServedError, UnknownGraphError
from service.metrics import Metrics
from service.notifications.deliveries import DeliveryStore
from service.notifications.notifier import Notifier, run_webhook
from service.oidc_client import OidcClient
from service.policy_in_force import put_in_force
from service.rate_limit import RateLimiter
from service.read_models import ReadModels, side_tables_for
from service.reservations import Reservations
from service.run_store import RunStore
from service.run_worker import RunWorker
from service.runs import RunManager, RunOutcome, ServedGraph
from service.schema import prepare
from service.sessions import SessionStore
from service.settings import ServerSettings
from service.sign_ins import SignIns

log = structlog.get_logger()


@dataclass
class Services:
    """Store, graphs, keys, runs and read models of one server process."""

    settings: ServerSettings
    store: Workflows
    graphs: dict[str, ServedGraph]
    keyring: Keyring
    read_models: ReadModels
    runs: RunManager
    metrics: Metrics
    # Threads reserved over HTTP and the browser's sessions: rows beside the runs, in the
    # store's own database (one connection per thread with the runs', on PostgreSQL).
    reservations: Reservations
    sessions: SessionStore
    # Webhook and notification deliveries, and the worker that makes and sends them (None
    # when no target and no webhook host is configured).
    deliveries: DeliveryStore
    notifier: Notifier | None = None
    scheduler: CronScheduler | None = None  # fires the crons that are due
    worker: RunWorker | None = None  # this process's share of the queue and takeovers
    # Checks API keys on the event loop, where the store's reads never block (an embedded
    # store): a Keyring on a store of its own, used by the loop's thread alone. None: keys
    # are checked in worker threads.
    key_checker: Keyring | None = None
    # Token buckets per API key on runs and decisions (service/rate_limit.py); none by default.
    rate_limiter: RateLimiter = field(default_factory=lambda: RateLimiter({}))
    # The oversight policy on record that this process's decisions name (its version).
    policy: PolicyVersion | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @classmethod
    def build(
        cls, settings: ServerSettings, store: Workflows, graphs: dict[str, ServedGraph]
    ) -> Services:
        read_models = ReadModels(
            store,
            projector=settings.projector,
            poll=settings.projector_poll,
            gather=settings.projector_gather,
            wait_timeout=settings.read_wait_timeout,
        )
        metrics = Metrics(read_models)
        try:
            record_roles(store, settings.roles, local_actor())  # when they changed: on record
        except UNDECODABLE:  # a damaged record: serve the configured roles, and say so
            log.error("the roles on record cannot be read: the configured ones are not recorded")
        for graph in graphs.values():
            if graph.step_timeout is None:
                graph.step_timeout = settings.step_timeout

        runs, worker, policy = build_runs(settings, store, graphs, metrics.observe_run)
        metrics.watch_runs(runs)
        deliveries = DeliveryStore(runs.store.db, create=may_create_tables(store))
        notifier = None
        if settings.notifications.targets or settings.notifications.allow_hosts:
            notifier = Notifier(
                store,
                deliveries,
                runs.store,
                read_models.db,
                settings.notifications,
                settings.base_url,
            )
            notifier.start()
        services = cls(
            settings,
            store,
            graphs,
            _keyring(store),
            read_models,
            runs,
            metrics,
            Reservations(runs.store.db, create=may_create_tables(store)),
            SessionStore(runs.store.db, create=may_create_tables(store)),
            deliveries,
            notifier,
            worker=worker,
            key_checker=_key_checker(store),
            rate_limiter=RateLimiter.from_settings(settings),
            policy=policy,
        )
        services.scheduler = CronScheduler(services, settings.cron_poll_seconds)
        services.scheduler.start()
        return services

    @cached_property
    def sign_ins(self) -> SignIns:
        """Sign-ins in progress with the OpenID Connect provider, in the store."""
        return SignIns(self.sessions.db)

    @cached_property
    def oidc(self) -> OidcClient | None:
        """The UI's OpenID Connect client, when a provider is configured (`[oidc]`)."""
        return None if self.settings.oidc is None else OidcClient(self.settings.oidc)

    @cached_property
    def reads(self) -> ReadLogs:
        """Where reads are recorded: once per reader, thing read and window."""
        return ReadLogs(self.store, self.settings.read_window_seconds)

    def assistant(self, name_or_assistant_id: str, version: int | None = None) -> Found:
        """The assistant named by a served graph's name or an assistant id, at `version`
        (its latest if None); UnknownGraphError if there is none."""
        found = assistant_catalog.find(
            self.store, self.graphs, self.started_at, name_or_assistant_id, version
        )
        if found is None:
            msg = (
                f"Invalid assistant: {name_or_assistant_id!r}. Must be either:\n"
                "- A valid assistant UUID, or\n"
                f"- One of the registered graphs: {', '.join(sorted(self.graphs))}"
            )
            raise UnknownGraphError(msg)
        return found

    def graph(self, name_or_assistant_id: str) -> ServedGraph:
        """The served graph of the assistant named by a graph's name or an assistant id;
        UnknownGraphError if there is none."""
        return self.graph_of(self.assistant(name_or_assistant_id))

    def graph_of(self, found: Found) -> ServedGraph:
        """The assistant's graph; GraphNotServedError if this server does not serve it."""
        graph = self.graphs.get(found.graph_id)
        if graph is None:
            msg = (
                f"Assistant {found.assistant_id!r} runs graph {found.graph_id!r}, which this "
                f"server does not serve (it serves {', '.join(sorted(self.graphs))})"
            )
            raise GraphNotServedError(msg)
        return graph

    def graph_of_thread(self, thread: WorkflowThread) -> ServedGraph:
        """The graph `thread` runs; GraphNotServedError if this server does not serve it."""
        graph = self.graphs.get(thread.graph_id)
        if graph is None:
            readable = (  # LangGraph shows a state only through its graph
                "its events and audit can be read"
                if thread.engine == LANGGRAPH
                else "it can be read"
            )
            msg = (
                f"Thread {thread.thread_id!r} runs graph {thread.graph_id!r}, which this "
                f"server does not serve (it serves {', '.join(sorted(self.graphs))}); "
                f"{readable}, not run"
            )
            raise GraphNotServedError(msg)
        return graph

    def watch_run(self, run_id: str, url: str) -> None:
        """Call `url` with the run once it has ended (its webhook)."""
        with self.deliveries.db.transaction() as cursor:
            self.deliveries.add(cursor, [run_webhook(run_id, url)])
        if self.notifier is not None:
            self.notifier.nudge()

    def close(self) -> None:
        client = self.__dict__.get("oidc")  # made on first use
        if client is not None:
            client.close()
        if self.scheduler is not None:
            self.scheduler.stop()
        if self.notifier is not None:
            self.notifier.stop()
        if self.worker is not None:
            self.worker.drain()  # no new runs; this process's leases renewed until they end
        self.runs.shutdown()
        if self.worker is not None:
            self.worker.stop()
        self.runs.store.close()
        self.read_models.stop()
        self.keyring.probe.close()
        if self.key_checker is not None:
            self.key_checker.probe.close()
            if self.key_checker.store is not self.store:
                self.key_checker.store.close()


def build_runs(
    settings: ServerSettings,
    store: Workflows,
    graphs: dict[str, ServedGraph],
    on_finish: Callable[[RunOutcome], None] | None = None,
) -> tuple[RunManager, RunWorker, PolicyVersion | None]:
    """A process's runs of `graphs` and its worker (started): leases renewed, the queue
    served, expired runs taken over (`holdpoint serve`, `holdpoint worker`). In a store
    that may not create tables, every table beside the events and every grant is checked
    first (`service.schema.prepare`); then the oversight policy is put in force (on
    record when it changed), before the worker takes a run."""
    side_tables = side_tables_for(store)
    runs = RunManager(
        store=RunStore(side_tables, create=prepare(store, side_tables)),
        admit=Suspensions(store).check,
        workers=settings.run_workers,
        busy_wait=settings.busy_wait_timeout,
        keep=settings.runs_kept,
        lease_ttl=settings.run_lease_seconds,
        turn=settings.run_turn,
        on_finish=on_finish,
    )
    policy = put_in_force(settings, store, graphs)
    worker = RunWorker(runs, store, graphs, poll=settings.run_poll_seconds)
    worker.start()
    return runs, worker, policy


def _keyring(store: Workflows) -> Keyring:
    """The keyring of the worker threads. On PostgreSQL it asks whether a key changed
    through a connection of its own (`PostgresKeyProbe`), not the store's pool."""
    recorder = store.recorder
    if not isinstance(recorder, PostgresAggregateRecorder):
        return Keyring(store)
    table = (recorder.datastore.schema, recorder.events_table_name)
    return Keyring(store, PostgresKeyProbe(postgres_params(store), *table))


def _key_checker(store: Workflows) -> Keyring | None:
    """A keyring for the event loop, where reading the store never blocks; else None.

    On SQLite (WAL) a read takes no lock and waits for no writer; the loop's keyring
    asks whether a key changed through a connection of its own (`SQLiteKeyProbe`: one
    primary-key lookup per request, some microseconds) and re-reads a changed key
    through a store of its own, so that it never waits for a pooled connection either.
    A memory store is read in memory. PostgreSQL is a network round trip: not on the loop.
    """
    if backend_of(store) == "memory":
        return Keyring(store)
    if backend_of(store) == "sqlite":
        own = open_store(store.url)
        recorder = own.recorder
        if not isinstance(recorder, SQLiteAggregateRecorder):  # not a file: ask the recorder
            return Keyring(own)
        path = str(own.env.get("SQLITE_DBNAME"))
        return Keyring(own, SQLiteKeyProbe(path, recorder.events_table_name))
    return None
