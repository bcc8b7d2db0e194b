"""Run the app under uvicorn: the store, the graphs, then the first keys and the banner.

On a store with no API key, the bootstrap keys file is claimed (created empty,
`service.bootstrap_keys`) before anything serves, so that a file that cannot
be written stops the start with no key made; the keys are made and written to
it once the port is bound.

Kept apart from `api.cli.serve` (which reads the command's options and
settings) because it imports uvicorn and the FastAPI app at module level:
`BannerServer` subclasses `uvicorn.Server`. Only `serve`'s handler imports
this module, so every other command starts without the web stack; merged into
serve.py, the class would have to be defined inside a function.
"""

from __future__ import annotations

import gc
import signal
import sys
from typing import Any

import uvicorn

from api.cli.banner import banner
from api.http.app import create_app
from domain.record.store import open_store
from service.bootstrap_keys import (
    BootstrapKeysFileError,
    ClaimedKeysFile,
    bootstrap_keys_path,
    claim_keys_file,
)
from service.cpu import run_on_cpu
from service.graph_loader import GraphSource, load_graphs
from service.services import Services
from service.settings import ServerSettings

# How long a thread may hold the GIL while another waits for it (Python's default: 5 ms).
# The event loop and the thread that runs the graphs take turns: with 5 ms slices a
# request's reply can wait a whole slice behind a run (BENCHMARKS.md, "Design choices,
# measured").
SWITCH_INTERVAL_SECONDS = 0.0005


class BannerServer(uvicorn.Server):
    """Once listening: make the first keys (into the claimed file) and print the banner.

    Keys are made only once the port is bound, so a server that cannot start
    never makes keys that nobody saw. They are printed only when standard
    output is a terminal: otherwise it may be a log.
    """

    def __init__(
        self, config: uvicorn.Config, services: Services, keys_file: ClaimedKeysFile | None
    ) -> None:
        super().__init__(config)
        self.services = services
        self.keys_file = keys_file
        self.failure: BootstrapKeysFileError | None = None

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.should_exit:
            return
        port = self.servers[0].sockets[0].getsockname()[1] if self.servers else None
        settings = self.services.settings.updated(port=port)
        keys = []
        if self.keys_file is not None:
            try:
                keys = self.keys_file.make_keys(self.services.keyring, settings.store_url)
            except BootstrapKeysFileError as error:
                self.failure = error  # raised once uvicorn has shut down what it started
                self.should_exit = True
                return
        graphs = sorted(self.services.graphs)
        path = bootstrap_keys_path(settings)
        print(banner(settings, graphs, keys, path, on_terminal=sys.stdout.isatty()), flush=True)


def run_server(settings: ServerSettings, sources: list[GraphSource]) -> int:
    """Serve the graphs of `sources` on the store of `settings` until SIGTERM or SIGINT."""
    if settings.cpu is not None:
        run_on_cpu(settings.cpu)  # before the store and the workers start their threads
    with open_store(settings.store_url) as store:
        services = Services.build(settings, store, load_graphs(sources, store))
        # Claimed once the store is known to be usable (its tables and grants checked),
        # before anything serves: a file that cannot be written stops the start here.
        try:
            keys_file = claim_keys_file(services.keyring, bootstrap_keys_path(settings))
        except BaseException:
            services.close()  # its worker has started
            raise
        try:
            return _serve(settings, services, keys_file)
        finally:
            if keys_file is not None:
                keys_file.release()  # the start failed before the keys were made


def _serve(settings: ServerSettings, services: Services, keys_file: ClaimedKeysFile | None) -> int:
    """Run the server on `services` until it stops."""
    # The event loop and HTTP parser are uvicorn's "auto" choice: uvloop and httptools,
    # both dependencies (less CPU per request than asyncio and h11).
    config = uvicorn.Config(
        create_app(services),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    # uvicorn stops gracefully on SIGTERM or SIGINT, then raises the signal again
    # with the handler found at start: a no-op here, so the store closes and the
    # command exits 0 after a clean shutdown.
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGTERM, signal.SIGINT)}
    # What is loaded by now (the web stack, the graphs, the store) lives as long as the
    # server: moved out of the garbage collector's reach, a full collection no longer
    # walks it (it paused every thread for about 0.1 s every few thousand requests).
    gc.collect()
    gc.freeze()
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    server = BannerServer(config, services, keys_file)
    try:
        server.run()
    finally:
        sys.setswitchinterval(switch_interval)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if server.failure is not None:
        raise server.failure
    return 0


def _ignore(*_: object) -> None:
    """A signal handler that does nothing."""
