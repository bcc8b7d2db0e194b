"""Run the app under uvicorn: the store, the graphs, then the first keys and the banner.

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
from service.graph_loader import GraphSource, load_graphs
from service.services import Services
from service.settings import ServerSettings

# How long a thread may hold the GIL while another waits for it (Python's default: 5 ms).
# The event loop and the thread that runs the graphs take turns: with 5 ms slices a
# request's reply can wait a whole slice behind a run (BENCHMARKS.md, "Design choices,
# measured").
SWITCH_INTERVAL_SECONDS = 0.0005


class BannerServer(uvicorn.Server):
    """Once listening: make the first keys (on a store without any) and print the banner.

    Keys are made only once the port is bound, so a server that cannot start
    never makes keys that nobody saw.
    """

    def __init__(self, config: uvicorn.Config, services: Services) -> None:
        super().__init__(config)
        self.services = services

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        if self.should_exit:
            return
        port = self.servers[0].sockets[0].getsockname()[1] if self.servers else None
        settings = self.services.settings.updated(port=port)
        keys = self.services.keyring.ensure_bootstrap_keys()
        print(banner(settings, sorted(self.services.graphs), keys), flush=True)


def run_server(settings: ServerSettings, sources: list[GraphSource]) -> int:
    """Serve the graphs of `sources` on the store of `settings` until SIGTERM or SIGINT."""
    with open_store(settings.store_url) as store:
        services = Services.build(settings, store, load_graphs(sources, store))
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
        try:
            BannerServer(config, services).run()
        finally:
            sys.setswitchinterval(switch_interval)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 0


def _ignore(*_: object) -> None:
    """A signal handler that does nothing."""
