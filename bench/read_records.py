"""What recording reads costs a busy queue (issue 24, who saw what): one reviewer reloads
`GET /approvals` (20 open refunds, each payload shown) against a real server on a SQLite
file, with reads recorded and with the recording turned off; the medians per request,
their ratio, and the events the recording wrote.

    PYTHONPATH=. .venv/bin/python -m bench.read_records [VIEWS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from api.http.app import create_app
from domain.record.store import open_store
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings

OPEN_REFUNDS = 20


def timed_views(client: httpx.Client, views: int) -> list[float]:
    seconds = []
    for _ in range(views):
        start = time.perf_counter()
        answer = client.get("/approvals")
        seconds.append(time.perf_counter() - start)
        assert answer.status_code == 200, answer.text
    return seconds


def main(views: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'holdpoint.db'}"
        store = open_store(url)
        services = Services.build(
            ServerSettings(store_url=url, port=0), store, load_graphs([], store)
        )
        _, agent = services.keyring.create("agent", "agent")
        _, reviewer = services.keyring.create("rita", "reviewer")
        server = uvicorn.Server(uvicorn.Config(create_app(services), port=0, log_config=None))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, headers={"x-api-key": agent}, timeout=60) as client:
            for _ in range(OPEN_REFUNDS):
                run = {"assistant_id": "refund", "input": {"refund_amount": 300.0}}
                assert client.post("/runs/wait", json=run).status_code == 200
        recording = services.reads.record
        with httpx.Client(base_url=base, headers={"x-api-key": reviewer}, timeout=60) as client:
            head = int(store.recorder.max_notification_id() or 0)
            timed_views(client, 20)  # warm up (the first view's reads are recorded)
            recorded = timed_views(client, views)
            written = int(store.recorder.max_notification_id() or 0) - head
            services.reads.record = lambda *_: 0  # type: ignore[method-assign]
            unrecorded = timed_views(client, views)
            services.reads.record = recording  # type: ignore[method-assign]
        server.should_exit = True
        thread.join()
        store.close()
    with_ms = statistics.median(recorded) * 1000
    without_ms = statistics.median(unrecorded) * 1000
    return {
        "views": views + 20,
        "events_written": written,
        "median_ms_recorded": round(with_ms, 2),
        "median_ms_unrecorded": round(without_ms, 2),
        "ratio": round(with_ms / without_ms, 2),
    }


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
