"""A real uvicorn server on a free local port, for the HTTP tests.

`running_server(store_url)` serves the seed graphs plus the test graphs of
`tests/api/http_graphs.py` from a background thread, with one key per role
(and a second reviewer and agent). The listening socket is bound and
listening before the server thread starts, so the first request simply
waits in the socket's backlog: no polling for readiness.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
import uvicorn
from langgraph_sdk import get_sync_client
from psycopg import sql

from api.http.app import create_app
from domain.record.application import Workflows
from domain.record.store import open_store
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings
from tests.api.http_graphs import served_test_graphs
from tests.conftest import POSTGRES_URL, require_postgres

# The endpoints that answer without a key (health, and LangGraph's server's /ok and /info).
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/ok", "/info", "/schemas/events"})
PRINCIPALS = {
    "agent": "agent",
    "agent2": "agent",
    "reviewer": "reviewer",
    "reviewer2": "reviewer",
    "auditor": "auditor",
    "admin": "admin",
}


@dataclass
class Server:
    url: str
    keys: dict[str, str]
    services: Services

    @property
    def store(self) -> Workflows:
        return self.services.store

    def http(
        self, who: str | None = None, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Client:
        headers = dict(headers or {})
        if who is not None:
            headers["x-api-key"] = self.keys[who]
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **kwargs)

    def sdk(self, who: str) -> Any:
        return get_sync_client(url=self.url, api_key=self.keys[who])

    def head(self) -> int:
        return int(self.store.recorder.max_notification_id() or 0)

    def event_count(self, thread_id: str) -> int:
        return len(self.store.thread_events(thread_id))


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    return sock


@contextmanager
def running_server(
    store_url: str,
    *,
    extra: Callable[[Workflows], dict[str, Any]] | None = None,
    sock: socket.socket | None = None,
    **settings: Any,
) -> Iterator[Server]:
    """A server on `store_url`: the seeds, the test graphs, and `extra(store)`'s graphs;
    on `sock` if given (a test that must name the server's URL before it starts)."""
    store = open_store(store_url)
    graphs = {**load_graphs([], store), **served_test_graphs(store)}
    if extra is not None:
        graphs.update(extra(store))
    sock = sock or listening_socket()
    port = sock.getsockname()[1]
    config = ServerSettings(store_url=store_url, port=port).updated(**settings)
    services = Services.build(config, store, graphs)
    keys = {
        name: services.keyring.create(name, role, note="test")[1]
        for name, role in PRINCIPALS.items()
    }
    server = uvicorn.Server(
        uvicorn.Config(create_app(services), log_config=None, access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield Server(f"http://127.0.0.1:{port}", keys, services)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
        store.close()


@contextmanager
def postgres_schema_url() -> Iterator[str]:
    """A PostgreSQL store URL with a fresh schema, dropped afterwards."""
    require_postgres()
    schema = f"test_http_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{POSTGRES_URL}?schema={schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@contextmanager
def server_on(kind: str, folder: Any, **settings: Any) -> Iterator[Server]:
    """A server on a fresh store of `kind` (sqlite or postgres)."""
    if kind == "sqlite":
        with running_server(f"sqlite:///{folder / 'holdpoint.db'}", **settings) as server:
            yield server
        return
    with postgres_schema_url() as url, running_server(url, **settings) as server:
        yield server
