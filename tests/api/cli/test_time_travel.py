"""`holdpoint history|state|diff|fork|replay` on real SQLite and PostgreSQL stores.

The graph lives in a file, as a user's would: `approval_v1.py` recorded the
threads, `approval_v2.py` is the next version of its code (`pay` writes
another log line). Most commands run in this process through `api.cli.main.main`
(its real parser and handlers); the progress bar, the exit status and
`--help` are checked on a real `holdpoint` subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from langgraph.types import Command as LangGraphCommand

from api.cli.main import main
from domain.access.keyring import Keyring
from domain.history.state_snapshots import get_state_history
from domain.history.time_travel import versions
from domain.record.store import open_store
from domain.record.thread import WorkflowThread
from domain.record.thread_uuids import thread_uuid
from domain.types import Command
from langgraph.checkpoint.holdpoint import HoldpointSaver
from projections.catalog import runner_for
from projections.pending_approvals import PendingApprovals
from service.graph_loader import GraphSource, load_graph
from tests.cli_process import holdpoint as holdpoint_process
from tests.conftest import store_url
from tests.saver.langgraph_graphs import refund_builder

GRAPH = """
import operator
from typing import Annotated, Any, TypedDict

from domain.graph import END, START, StateGraph
from domain.types import interrupt


class Approval(TypedDict):
    amount: float
    approved: Any
    log: Annotated[list, operator.add]


def ask(state):
    return {"approved": interrupt({"question": f"Pay {state['amount']}?"}), "log": ["ask"]}


def pay(state):
    return {"log": ["PAID".format(state["approved"])]}


builder = StateGraph(Approval)
builder.add_node("ask", ask)
builder.add_node("pay", pay)
builder.add_edge(START, "ask")
builder.add_edge("ask", "pay")
builder.add_edge("pay", END)
"""


@dataclass
class Story:
    url: str
    v1: str  # --graph approval=<file>:builder, the code the threads ran
    v2: str  # the next version of that code

    def head(self) -> int:
        with open_store(self.url) as store:
            return int(store.recorder.max_notification_id() or 0)

    def stored(self, thread_id: str) -> list[bytes]:
        with open_store(self.url) as store:
            return [bytes(e.state) for e in store.recorder.select_events(thread_uuid(thread_id))]


@pytest.fixture(params=["sqlite", "postgres"])
def story(request, tmp_path) -> Story:
    """t1: asked about 250.0 and approved (versions 1-8, paused at 4); t2: paused."""
    url = store_url(request.param, tmp_path, request)
    files = {}
    for version, paid in (("v1", "pay approved={}"), ("v2", "paid, approved={}")):
        path = tmp_path / f"approval_{version}.py"
        path.write_text(GRAPH.replace("PAID", paid), encoding="utf-8")
        files[version] = f"approval={path}:builder"
    with open_store(url) as store:
        graph = load_graph(GraphSource("approval", tmp_path / "approval_v1.py", "builder"), store)
        graph.invoke({"amount": 250.0, "approved": None}, {"configurable": {"thread_id": "t1"}})
        graph.invoke(Command(resume=True), {"configurable": {"thread_id": "t1"}})
        graph.invoke({"amount": 20.0, "approved": None}, {"configurable": {"thread_id": "t2"}})
    return Story(url, files["v1"], files["v2"])


@dataclass
class Done:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def holdpoint(story: Story, *args: str, monkeypatch: pytest.MonkeyPatch) -> Done:
    """`holdpoint ARGS` in this process, on the story's store."""
    monkeypatch.setenv("HOLDPOINT_STORE", story.url)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse: --help, or a malformed command line
            code = int(exit_.code or 0)
        finally:
            structlog.reset_defaults()  # main() configured logging onto `err`
    return Done(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(story, monkeypatch):
    def run(*args: str) -> Done:
        return holdpoint(story, *args, monkeypatch=monkeypatch)

    return run


# -- history ------------------------------------------------------------------------


def test_history_lists_every_version_with_its_event_and_the_checkpoint_ids(story, cli):
    # When
    done = cli("history", "t1")

    # Then
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[0] == "Thread t1 · graph approval · status idle · 8 versions"
    rows = [line.split() for line in lines[3:]]
    assert [row[0] for row in rows] == [str(v) for v in range(1, 9)]
    assert [row[3] for row in rows] == [
        "ThreadStarted",
        "InputReceived",
        "NodeCompleted",
        "InterruptRaised",
        "InterruptResumed",
        "NodeCompleted",
        "NodeCompleted",
        "ThreadCompleted",
    ]
    with open_store(story.url) as store:
        listed = {
            s.config["configurable"]["checkpoint_id"]
            for s in get_state_history(store, {"configurable": {"thread_id": "t1"}})
        }
    assert {row[4] for row in rows} - {"-"} == listed
    assert 'ask asks {"question":"Pay 250.0?"}' in lines[6]


def test_history_json_gives_each_version_and_no_lineage_for_a_started_thread(story, cli):
    # When
    body = cli("history", "t1", "--json").json()

    # Then
    assert [v["version"] for v in body["versions"]] == list(range(1, 9))
    assert body["versions"][4]["data"]["resume"] is True
    assert (body["forked_from"], body["forks"]) == (None, [])
    assert (body["graph_id"], body["status"]) == ("approval", "idle")
    assert len(body["graph_digest"]) == 64


def test_history_shows_lineage_both_ways_after_a_fork(story, cli):
    # Given
    assert cli("fork", "t1", "--version", "4", "--as", "t1-b").code == 0

    # When
    source, fork = cli("history", "t1", "--json").json(), cli("history", "t1-b", "--json").json()
    text = cli("history", "t1-b").out

    # Then
    assert [(f["thread_id"], f["version"]) for f in source["forks"]] == [("t1-b", 4)]
    assert fork["forked_from"]["thread_id"] == "t1"
    assert fork["forked_from"]["version"] == 4
    assert fork["forked_from"]["event_hash"] == source["versions"][3]["event_hash"]
    assert "Forked from t1 at version 4" in text
    assert "Forks: t1-b (at version 4)" in cli("history", "t1").out


# -- state ----------------------------------------------------------------------------


def test_state_at_a_version_shows_values_next_status_and_interrupt(story, cli):
    # When
    done = cli("state", "t1", "--version", "4")
    body = cli("state", "t1", "--version", "4", "--json").json()

    # Then
    assert done.code == 0, done.err
    assert done.out.startswith("Thread t1 at version 4 of 8 (InterruptRaised, recorded ")
    assert "status      interrupted" in done.out
    assert "next        ask" in done.out
    assert body["values"] == {"amount": 250.0, "approved": None, "log": []}
    assert body["event"]["type"] == "InterruptRaised"
    [pending] = body["interrupts"]
    assert pending["value"] == {"question": "Pay 250.0?"}
    assert f"interrupt   {pending['id']} (ask)" in done.out


def test_state_without_a_version_is_the_latest(story, cli):
    # When
    body = cli("state", "t1", "--json").json()

    # Then
    assert (body["version"], body["status"]) == (8, "idle")
    assert body["values"]["log"] == ["ask", "pay approved=True"]


def test_state_at_a_timestamp_is_the_last_version_recorded_by_then(story, cli):
    # Given
    with open_store(story.url) as store:
        stamps = [e.timestamp for e in versions(store, "t1")]
    moment = stamps[5]

    # When
    body = cli("state", "t1", "--at", moment.isoformat(), "--json").json()
    naive = cli("state", "t1", "--at", moment.replace(tzinfo=None).isoformat(), "--json").json()

    # Then
    expected = max(v for v, t in enumerate(stamps, 1) if t <= moment)
    assert body["version"] == naive["version"] == expected


# -- diff --------------------------------------------------------------------------------


def test_diff_shows_changed_keys_with_old_and_new_values(story, cli):
    # When
    done = cli("diff", "t1", "3", "7")
    body = cli("diff", "t1", "3", "7", "--json").json()

    # Then
    assert done.out.splitlines() == [
        "Thread t1, version 3 -> 7: 2 keys changed",
        "~ approved: null -> true",
        '~ log: [] -> ["ask","pay approved=True"]',
        "next: ask -> -",
        "status: running -> idle",
    ]
    assert body["changes"] == [
        {"key": "approved", "change": "changed", "old": None, "new": True},
        {"key": "log", "change": "changed", "old": [], "new": ["ask", "pay approved=True"]},
    ]


def test_diff_takes_checkpoint_ids_too(story, cli):
    # Given
    ids = {
        v["version"]: v["checkpoint_id"] for v in cli("history", "t1", "--json").json()["versions"]
    }

    # When
    body = cli("diff", "t1", ids[3], ids[6], "--json").json()

    # Then
    assert (body["from"], body["to"]) == (3, 6)
    assert [c["key"] for c in body["changes"]] == ["approved", "log"]


# -- fork ---------------------------------------------------------------------------------


def test_fork_inside_a_pause_starts_a_new_thread_with_a_new_pending_approval(story, cli):
    # Given
    before = story.stored("t1")

    # When
    done = cli("fork", "t1", "--version", "4", "--as", "t1-b")

    # Then
    assert done.code == 0, done.err
    assert done.out.startswith("Forked t1 at version 4 as t1-b (source event ")
    assert story.stored("t1") == before
    with open_store(story.url) as store:
        forked, raised = store.thread_events("t1-b")
        runner = runner_for(store)
        runner.catch_up()
        rows = PendingApprovals(runner.db).page().items
        runner.close()
    assert isinstance(forked, WorkflowThread.ThreadForked)
    assert (forked.source_thread_id, forked.source_version) == ("t1", 4)
    assert isinstance(raised, WorkflowThread.InterruptRaised)
    assert f"Raised again on t1-b: interrupt {raised.interrupt_id}" in done.out
    assert {(row.thread_id, row.interrupt_id) for row in rows} >= {("t1-b", raised.interrupt_id)}


def reviewer_key(story: Story) -> str:
    with open_store(story.url) as store:
        return Keyring(store).create("rita", "reviewer", note="test")[1]


def test_fork_past_an_answer_needs_the_key_of_who_may_decide_it(story, cli):
    # Given version 6 of t1: approved, its `pay` not yet run
    head = story.head()

    # When it is forked there without a key (the local user, with no role)
    done = cli("fork", "t1", "--version", "6", "--as", "t1-b")

    # Then it is refused, on record, and no thread is made
    assert done.code == 2
    assert "a fork there would run under that decision" in done.err
    with open_store(story.url) as store:
        assert store.thread("t1-b") is None
        [refusal] = Keyring(store).refusals(after=head)
    assert (refusal.reason, refusal.action, refusal.role) == ("hold_point", "fork", None)


def test_fork_without_as_names_the_new_thread_after_its_source_and_version(story, cli):
    # When (a reviewer's key: version 6 is past the answer, see above)
    body = cli("fork", "t1", "--version", "6", "--api-key", reviewer_key(story), "--json").json()

    # Then
    assert body["thread_id"] == "t1~6"
    assert (body["source_thread_id"], body["source_version"], body["reraised"]) == ("t1", 6, [])
    assert cli("state", "t1~6", "--json").json()["next"] == ["pay"]


def test_fork_of_a_real_langgraph_graphs_paused_thread_is_refused_and_writes_nothing(story, cli):
    # Given a real LangGraph graph's thread, paused at its question
    with open_store(story.url) as store:
        saver = HoldpointSaver(store, graph_id="refund-lg")
        refund_builder().compile(checkpointer=saver).invoke(
            {"amount": 300}, {"configurable": {"thread_id": "lg"}}
        )
        version = store.thread("lg").version
    head = story.head()

    # When
    done = cli("fork", "lg", "--version", str(version), "--as", "lg-b")

    # Then
    assert done.code == 2
    assert "'lg' ran a real LangGraph graph and was interrupted at version" in done.err
    assert story.head() == head


def test_fork_of_a_real_langgraph_graphs_thread_at_rest_copies_its_checkpoints(story, cli):
    # Given a real LangGraph graph's thread, approved and paid
    with open_store(story.url) as store:
        saver = HoldpointSaver(store, graph_id="refund-lg")
        graph = refund_builder().compile(checkpointer=saver)
        graph.invoke({"amount": 300}, {"configurable": {"thread_id": "lg"}})
        graph.invoke(LangGraphCommand(resume=True), {"configurable": {"thread_id": "lg"}})
        version = store.thread("lg").version

    # When
    body = cli("fork", "lg", "--version", str(version), "--as", "lg-b", "--json").json()

    # Then the fork starts as the thread stood, with its checkpoints
    assert (body["source_thread_id"], body["source_version"]) == ("lg", version)
    with open_store(story.url) as store:
        saver = HoldpointSaver(store)
        assert [
            t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "lg-b"}})
        ] == [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "lg"}})]


def test_a_langgraph_threads_history_state_and_diff_go_by_langgraphs_checkpoint_ids(story, cli):
    # Given a real LangGraph graph's thread, approved and paid
    config = {"configurable": {"thread_id": "lg"}}
    with open_store(story.url) as store:
        graph = refund_builder().compile(checkpointer=HoldpointSaver(store, graph_id="lg"))
        graph.invoke({"amount": 300}, config)
        graph.invoke(LangGraphCommand(resume=True), config)
        listed = [
            s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(config)
        ]

    # When its versions are listed, its state shown and two checkpoints compared
    versions = cli("history", "lg", "--json").json()["versions"]
    state = cli("state", "lg", "--json").json()
    ids = [v["checkpoint_id"] for v in versions if v["checkpoint_id"]]
    diff = cli("diff", "lg", ids[1], ids[-1], "--json").json()

    # Then they name the checkpoints by the ids LangGraph lists, and take them back
    assert ids == listed[::-1]
    assert state["checkpoint_id"] == listed[0]
    assert (diff["from"], diff["to"]) == (
        next(v["version"] for v in versions if v["checkpoint_id"] == ids[1]),
        versions[-2]["version"],
    )
    assert [(c["key"], c["new"]) for c in diff["changes"]] == [
        ("log", ["reviewed: True", "paid 300"])
    ]


# -- replay -------------------------------------------------------------------------------


def test_replay_on_the_same_code_matches_and_writes_nothing(story, cli):
    # Given
    head, before = story.head(), story.stored("t1")

    # When
    done = cli("replay", "t1", "--graph", story.v1)

    # Then
    assert done.code == 0, done.err
    assert "Matches the record: 3 steps, no divergence." in done.out
    assert "(same code)" in done.out
    assert story.head() == head
    assert story.stored("t1") == before


def test_replay_on_changed_code_reports_the_step_and_exits_1(story, cli):
    # Given
    head = story.head()

    # When
    done = cli("replay", "t1", "--graph", story.v2)
    body = cli("replay", "t1", "--graph", story.v2, "--json").json()

    # Then
    assert done.code == 1
    assert "Diverges from the record at 1 of 3 steps." in done.out
    assert "the code changed since the thread started" in done.out
    assert [(s["version"], s["node"], s["verdict"]) for s in body["steps"]] == [
        (4, "ask", "match"),
        (6, "ask", "match"),
        (7, "pay", "different-update"),
    ]
    assert body["steps"][2]["replayed"]["update"] == {"log": ["paid, approved=True"]}
    assert body["digest"]["matches"] is False
    assert story.head() == head


def test_replay_all_replays_every_thread_of_the_graph(story, cli):
    # When
    same = cli("replay", "--all", "--graph", story.v1, "--json")
    changed = cli("replay", "--all", "--graph", story.v2, "--json")

    # Then
    assert (same.code, changed.code) == (0, 1)
    assert same.json()["threads"] == 2
    assert same.json()["diverging"] == []
    assert changed.json()["diverging"] == ["t1"]  # t2 is paused before `pay` ever ran
    assert changed.json()["matching"] == 1


def test_replay_all_shows_progress_and_a_summary(story):
    # When
    done = holdpoint_process(story.url, "replay", "--all", "--graph", story.v2)

    # Then
    assert done.returncode == 1, done.stderr
    assert "replay" in done.stderr
    assert "2/2 100%" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Replayed 2 threads of approval (2)"
    assert lines[1] == "1 match, 1 diverge, 0 failed"
    assert lines[-1].startswith("  t1 (approval): version 7, different-update: node 'pay'")


# -- user errors, and reading without the graph's code ----------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "nope"], "holdpoint: error: Thread 'nope' does not exist"),
        (["state", "nope"], "holdpoint: error: Thread 'nope' does not exist"),
        (["state", "t1", "--version", "9"], "has versions 1 to 8; there is no version 9"),
        (["state", "t1", "--version", "0"], "there is no version 0"),
        (["state", "t1", "--at", "last tuesday"], "--at 'last tuesday' is not an ISO 8601"),
        (["state", "t1", "--at", "2001-01-01"], "Thread 't1' did not exist at 2001-01-01"),
        (["state", "t1", "--version", "x"], "argument --version: invalid int value: 'x'"),
        (["state", "t1", "--version", "2", "--at", "2001-01-01"], "not allowed with argument"),
        (["diff", "t1", "3", "99"], "there is no version 99"),
        (["diff", "t1", "3", "not-a-checkpoint"], "has no checkpoint 'not-a-checkpoint'"),
        (["fork", "t1", "--version", "99"], "there is no version 99"),
        (["fork", "t1", "--version", "1"], "has no state at version 1"),
        (["fork", "t1", "--version", "4", "--as", "t2"], "Thread 't2' already exists"),
        (["fork", "nope", "--version", "2"], "Thread 'nope' does not exist"),
        (["fork", "t1"], "the following arguments are required: --version"),
        (["replay", "nope"], "Thread 'nope' does not exist"),
        (["replay"], "replay needs one THREAD, or --all (not both)"),
        (["replay", "t1", "--all"], "replay needs one THREAD, or --all (not both)"),
        (["replay", "t1"], "ran graph 'approval', which is not loaded"),
        (["replay", "t1", "--graph", "approval=missing.py:builder"], "no file"),
        (["replay", "t1", "--graph", "approval"], "must be NAME=path/to/file.py:attr"),
    ],
)
def test_a_user_error_is_one_line_on_stderr_exit_2_and_changes_nothing(story, cli, args, message):
    # Given
    head = story.head()

    # When
    done = cli(*args)

    # Then
    assert done.code == 2
    assert message in done.err
    assert done.out == ""
    assert story.head() == head


def test_history_state_and_diff_read_a_thread_whose_graph_code_is_gone(story, cli):
    # Given the graph's files are deleted
    for spec in (story.v1, story.v2):
        Path(spec.partition("=")[2].rpartition(":")[0]).unlink()

    # When
    history, state, diff = (
        cli("history", "t1"),
        cli("state", "t1", "--version", "6"),
        cli("diff", "t1", "1", "8"),
    )

    # Then
    assert (history.code, state.code, diff.code) == (0, 0, 0)
    assert "Thread t1 · graph approval · status idle · 8 versions" in history.out
    assert "status      running" in state.out
    assert diff.out.splitlines()[1:4] == [
        "+ amount: 250.0",
        "+ approved: true",
        '~ log: [] -> ["ask","pay approved=True"]',
    ]


CUSTOM_REDUCER_GRAPH = """
from typing import Annotated, TypedDict

from domain.graph import END, START, StateGraph


def keep_longest(old, new):
    return old if len(old) >= len(new) else new


class Notes(TypedDict):
    note: Annotated[str, keep_longest]


def write(state):
    return {"note": "short"}


builder = StateGraph(Notes)
builder.add_node("write", write)
builder.add_edge(START, "write")
builder.add_edge("write", END)
"""


def test_a_state_with_its_own_reducer_is_read_with_its_graph_given_and_refused_without(
    sqlite_url, tmp_path
):
    # Given a thread whose state key folds with a reducer of the graph's own module
    path = tmp_path / "notes_graph.py"
    path.write_text(CUSTOM_REDUCER_GRAPH, encoding="utf-8")
    with open_store(sqlite_url) as store:
        graph = load_graph(GraphSource("notes", path, "builder"), store)
        graph.invoke({"note": "a longer note"}, {"configurable": {"thread_id": "n1"}})

    # When it is read in a fresh process, without and then with the graph's code
    refused = holdpoint_process(sqlite_url, "state", "n1", "--json")
    read = holdpoint_process(
        sqlite_url, "state", "n1", "--json", "--graph", f"notes={path}:builder"
    )

    # Then the reducer is not looked up by its recorded name, and runs once its graph is given
    assert refused.returncode == 2
    assert "is not known to this process" in refused.stderr
    assert refused.stdout == ""
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["values"] == {"note": "a longer note"}


@pytest.mark.parametrize(
    "command",
    [
        ["state", "t1"],
        ["history", "t1"],
        ["diff", "t1", "1", "2"],
        ["fork", "t1", "--version", "2"],
        ["replay", "t1"],
        ["verify"],
        ["export", "t1", "--out", "bundle.json"],
        ["report"],
        ["projections", "status"],
        ["projections", "rebuild"],
        ["threads", "list"],
        ["keys", "list"],
    ],
)
def test_a_command_on_a_store_refuses_a_store_file_that_is_not_there(tmp_path, command):
    # Given a misspelt store path
    url = f"sqlite:///{tmp_path / 'typo' / 'holdpoint.db'}"

    # When
    done = holdpoint_process(url, *command)

    # Then: an error naming the path, and nothing created
    assert done.returncode == 2
    assert "No store at" in done.stderr
    assert not (tmp_path / "typo").exists()


def test_help_names_each_option(sqlite_url):
    # When
    helps = {
        name: holdpoint_process(sqlite_url, name, "--help").stdout
        for name in ("history", "state", "diff", "fork", "replay")
    }

    # Then
    assert "THREAD" in helps["history"]
    assert "--json" in helps["history"]
    assert "--version N" in helps["state"]
    assert "--at TIMESTAMP" in helps["state"]
    assert "usage: holdpoint diff [-h] [--json] [--graph NAME=PATH.py:ATTR]" in helps["diff"]
    assert "THREAD A B" in helps["diff"]
    assert "checkpoint id" in helps["diff"]
    assert "--version N" in helps["fork"]
    assert "--as NEW_ID" in helps["fork"]
    assert "--all" in helps["replay"]
    assert "--graph NAME=PATH.py:ATTR" in helps["replay"]
    assert "Exit status 0" in helps["replay"]
    top = holdpoint_process(sqlite_url, "--help").stdout
    for name in ("history", "state", "diff", "fork", "replay"):
        assert name in top
