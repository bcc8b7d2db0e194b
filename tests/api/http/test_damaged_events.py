"""A damaged event is quarantined, not fatal: the server serves every other thread.

Given a real store (a SQLite file, a PostgreSQL schema) holding every kind of event
of every aggregate (`tests/damaged_store.py`), one of its rows damaged with raw SQL
(its JSON cut short, the append-only triggers dropped first), when the server starts
on it (the app in process, through FastAPI's TestClient), then:

- its projector passes the event by and reaches the head: the read models of every
  other event are there, and the event is in the quarantine;
- `/readyz` answers 200 with `"status": "degraded"`, naming the event (position,
  thread, version, why), and `/metrics` counts it;
- `holdpoint verify`'s scan names it (position, thread, version) as unreadable;
- every read of its thread is a 409 `thread-unreadable` naming the thread and the
  version and pointing to `holdpoint verify` (a search of threads leaves it out); a
  damaged key's event makes that key a 401; and a new thread's run and the decision
  on its interrupt work as ever.

Each case is one event class on one store kind, set up once for its tests.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest
from eventsourcing.utils import get_topic
from fastapi.testclient import TestClient
from httpx import Response

from api.http.app import create_app
from api.http.problems import PROBLEM_TYPES
from domain.access.identity import ApiKey
from domain.integrity.whole_log import THREAD_TOPICS, UNREADABLE
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from integrity.scan import scanner_for
from integrity.verify_log import scan_log, with_thread_ids
from projections.quarantine import Quarantine
from projections.thread_index import THREADS
from projections.threads import STARTS
from service.graph_loader import load_graphs
from service.services import Services
from service.settings import ServerSettings
from tests.api.http_graphs import served_test_graphs
from tests.api.http_harness import PRINCIPALS, postgres_schema_url
from tests.api.ui.ui_client import UiClient, csrf_of
from tests.damaged_store import EVENT_CLASSES, Damage, Recorded, record_every_kind
from tests.integrity.tamper import Row
from tests.projections.histories import rows

UNREADABLE_TYPE = PROBLEM_TYPES + "thread-unreadable"


@dataclass
class Damaged:
    """The app serving a store whose one event `row` was damaged."""

    client: TestClient
    keys: dict[str, str]
    services: Services
    recorded: Recorded
    row: Row
    cls: type

    @property
    def position(self) -> int:
        return self.row[0]

    @property
    def version(self) -> int:
        return self.row[2]

    @property
    def thread_id(self) -> str | None:
        return self.recorded.thread_of.get(self.row[1])

    def call(self, who: str, method: str, path: str, body: object = None) -> Response:
        return self.client.request(method, path, json=body, headers={"x-api-key": self.keys[who]})


@contextmanager
def store_url(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'holdpoint.db'}"
        return
    with postgres_schema_url() as url:
        yield url


@contextmanager
def served(url: str) -> Iterator[tuple[TestClient, dict[str, str], Services]]:
    """The app on the store at `url`, its projector in process, a key per principal."""
    store = open_store(url)
    try:
        graphs = {**load_graphs([], store), **served_test_graphs(store)}
        services = Services.build(ServerSettings(store_url=url), store, graphs)
        keys = {name: services.keyring.create(name, role)[1] for name, role in PRINCIPALS.items()}
        with TestClient(create_app(services)) as client:
            yield client, keys, services
    finally:
        store.close()


@contextmanager
def damaged_app(
    kind: str, cls: type, folder: Path, thread_id: str | None = None
) -> Iterator[Damaged]:
    with store_url(kind, folder) as url:
        # Given a store with every kind of event, and one event of `cls` cut short (the
        # first of its class; or `thread_id`'s)
        with open_store(url) as store:
            recorded = record_every_kind(store)
            damage = Damage(url, store)
            if thread_id is None:
                row = damage.row_of(cls, recorded)
            else:
                rows = damage.tamper.thread_rows(thread_id)
                row = next(r for r in rows if r[3] == get_topic(cls))
            damage.cut_short(row)
            damage.close()
        # When the server starts on it
        with served(url) as (client, keys, services):
            yield Damaged(client, keys, services, recorded, row, cls)


def case_id(case: tuple[str, type]) -> str:
    return f"{case[0]}-{case[1].__qualname__}"


def is_thread_event(cls: type) -> bool:
    return get_topic(cls) in THREAD_TOPICS


CASES = [(kind, cls) for kind in ("sqlite", "postgres") for cls in EVENT_CLASSES]
THREAD_CASES = [case for case in CASES if is_thread_event(case[1])]
KEY_CASES = [case for case in CASES if case[1] in (ApiKey.KeyCreated, ApiKey.KeyRevoked)]


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def damaged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    kind, cls = request.param
    with damaged_app(kind, cls, tmp_path_factory.mktemp("damaged")) as app:
        yield app


@pytest.fixture(scope="module", params=THREAD_CASES, ids=case_id)
def damaged_thread(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    kind, cls = request.param
    with damaged_app(kind, cls, tmp_path_factory.mktemp("damaged")) as app:
        yield app


@pytest.fixture(scope="module", params=KEY_CASES, ids=case_id)
def damaged_key(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    kind, cls = request.param
    with damaged_app(kind, cls, tmp_path_factory.mktemp("damaged")) as app:
        yield app


# -- every kind of event ------------------------------------------------------


def test_the_projector_passes_the_event_by_and_reaches_the_head(damaged):
    read_models = damaged.services.read_models

    # Then it caught up with the whole log, and is still running
    read_models.catch_up_to_head()
    assert read_models.alive
    assert read_models.failure is None
    assert {s.position for s in read_models.status()} == {read_models.head()}
    # And it quarantined the event, and only it
    [quarantined] = Quarantine(read_models.db).events()
    assert (quarantined.position, quarantined.topic) == (damaged.position, damaged.row[3])
    assert quarantined.error.startswith("its stored state is not JSON")


def test_the_read_models_hold_every_other_thread(damaged):
    # Then the thread index knows every thread but the one whose start is the damaged event
    damaged.services.read_models.catch_up_to_head()
    known = {row[1] for row in rows(damaged.services.read_models.db, THREADS)}
    lost = {damaged.thread_id} if issubclass(damaged.cls, STARTS) else set()
    assert set(damaged.recorded.threads) - lost <= known
    assert not known & lost


def test_readyz_is_degraded_and_names_the_event(damaged):
    damaged.services.read_models.catch_up_to_head()

    ready = damaged.client.get("/readyz")

    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded"
    assert ready.json()["quarantined_count"] == 1
    [named] = ready.json()["quarantined"]
    assert (named["position"], named["thread_id"], named["version"], named["event"]) == (
        damaged.position,
        damaged.thread_id,
        damaged.version,
        damaged.cls.__name__,
    )
    assert named["error"].startswith("its stored state is not JSON")


def test_the_metrics_count_the_quarantined_event(damaged):
    damaged.services.read_models.catch_up_to_head()

    scraped = damaged.call("auditor", "GET", "/metrics")

    assert scraped.status_code == 200
    assert "holdpoint_quarantined_events 1.0" in scraped.text.splitlines()


def test_verify_names_the_event_as_unreadable(damaged):
    store = damaged.services.store

    verdict = scan_log(store, jobs=1).verdict

    scanner = scanner_for(store)
    try:
        [problem] = with_thread_ids(verdict.problems, scanner)
    finally:
        scanner.close()
    assert (problem.kind, problem.position, problem.version, problem.thread_id) == (
        UNREADABLE,
        damaged.position,
        damaged.version,
        damaged.thread_id,
    )
    assert problem.detail.startswith(f"version {damaged.version} ({damaged.cls.__name__}) cannot")


def test_a_new_threads_run_and_the_decision_on_its_interrupt_work(damaged):
    # When an agent starts a refund and a reviewer approves it, after the quarantine
    thread_id = damaged.call("agent", "POST", "/threads", {}).json()["thread_id"]
    body = {"assistant_id": "refund", "input": {"refund_amount": 250}}
    asked = damaged.call("agent", "POST", f"/threads/{thread_id}/runs/wait", body)
    [pending] = asked.json()["__interrupt__"]
    decided = damaged.call(
        "reviewer", "POST", f"/approvals/{pending['id']}/decision", {"decision": "approve"}
    )

    # Then both were answered as on a sound store, and the run the answer resumed ends
    assert (asked.status_code, decided.status_code) == (200, 200), decided.text
    assert decided.json()["resumed"] is True
    run_id = decided.json()["run_id"]
    ended = damaged.call("auditor", "GET", f"/threads/{thread_id}/runs/{run_id}/join")
    assert ended.json()["outcome"] == "Refund of $250 processed."


def test_a_thread_the_damage_is_not_in_reads_as_ever(damaged):
    sound = next(t for t in ("done", "hp-edited") if t != damaged.thread_id)

    answered = damaged.call("auditor", "GET", f"/threads/{sound}/state")

    assert answered.status_code == 200
    assert answered.json()["values"]


def test_a_search_of_every_thread_answers_without_the_damaged_one(damaged):
    found = damaged.call("auditor", "POST", "/threads/search", {"limit": 100})

    assert found.status_code == 200, found.text
    ids = {thread["thread_id"] for thread in found.json()}
    assert set(damaged.recorded.threads) - {damaged.thread_id} <= ids
    assert damaged.thread_id not in ids


# -- a thread's events ----------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/threads/{t}"),
        ("GET", "/threads/{t}/state"),
        ("GET", "/threads/{t}/history"),
        ("POST", "/threads/{t}/history"),
        ("GET", "/threads/{t}/events"),
        ("GET", "/threads/{t}/audit"),
        ("GET", "/threads/{t}/versions/{v}"),
    ],
)
def test_a_read_of_the_damaged_thread_is_a_409_naming_it(damaged_thread, method, path):
    thread_id, version = damaged_thread.thread_id, damaged_thread.version
    assert thread_id is not None

    answer = damaged_thread.call("auditor", method, path.format(t=thread_id, v=version), {})

    assert_unreadable(answer, damaged_thread)


def test_a_run_on_the_damaged_thread_is_a_409_naming_it(damaged_thread):
    path = f"/threads/{damaged_thread.thread_id}/runs/wait"

    answer = damaged_thread.call("agent", "POST", path, {"assistant_id": "refund", "input": None})

    assert_unreadable(answer, damaged_thread)


def test_the_ui_page_of_the_damaged_thread_is_a_409_naming_it(damaged_thread):
    ui = UiClient("http://testserver")  # keeps the Secure session cookie over plain HTTP
    ui.close()
    ui.http = damaged_thread.client
    page = ui.get("/ui/sign-in")
    form = {"csrf_token": csrf_of(page.text), "api_key": damaged_thread.keys["auditor"]}
    assert ui.post_form("/ui/sign-in", form, follow_redirects=False).status_code == 303

    page = ui.get(f"/ui/threads/{damaged_thread.thread_id}", follow_redirects=False)

    assert page.status_code == 409
    assert f"Thread {damaged_thread.thread_id!r} cannot be read" in html.unescape(page.text)
    assert "holdpoint verify" in page.text


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_decision_on_an_interrupt_of_the_damaged_thread_is_a_409(kind, tmp_path):
    # Given thread `both` (one of its two interrupts still open), its input cut short
    with damaged_app(kind, WorkflowThread.InputReceived, tmp_path, "both") as damaged:
        queue = damaged.call("reviewer", "GET", "/approvals", None).json()["data"]
        [open_one] = [row for row in queue if row["thread_id"] == "both"]
        before = damaged.services.store.recorder.max_notification_id()

        # When a reviewer answers it
        answer = damaged.call(
            "reviewer",
            "POST",
            f"/approvals/{open_one['interrupt_id']}/decision",
            {"decision": "approve"},
        )

        # Then it is refused as unreadable, and nothing is recorded on the thread
        assert_unreadable(answer, damaged)
        recorded = damaged.services.store.recorder.select_notifications(start=before + 1, limit=100)
        assert not [n for n in recorded if UUID(str(n.originator_id)).hex == damaged.row[1]]


def assert_unreadable(answer: Response, damaged: Damaged) -> None:
    assert answer.status_code == 409, answer.text
    problem = answer.json()
    assert problem["type"] == UNREADABLE_TYPE
    assert (problem["thread_id"], problem["version"]) == (damaged.thread_id, damaged.version)
    assert problem["detail"].startswith(
        f"Thread {damaged.thread_id!r} cannot be read: its event at version {damaged.version} "
        f"({damaged.cls.__name__}) cannot be decoded: its stored state is not JSON"
    )
    assert problem["detail"].endswith("run `holdpoint verify` to see what is wrong")


# -- a key's events ----------------------------------------------------------------


def test_a_key_whose_event_is_damaged_is_refused_and_the_others_work(damaged_key):
    raw = (
        damaged_key.recorded.victim_key
        if damaged_key.cls is ApiKey.KeyCreated
        else damaged_key.recorded.revoked_key
    )

    refused = damaged_key.client.get("/threads/done", headers={"x-api-key": raw})
    served = damaged_key.call("reviewer", "GET", "/threads/done")

    assert refused.status_code == 401
    assert refused.json()["detail"].endswith(
        "is not valid: its record in the store cannot be read (the store is damaged there; "
        "an administrator can run `holdpoint verify`)"
    )
    assert served.status_code == 200
