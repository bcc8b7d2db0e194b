"""`holdpoint serve` as a user runs it: a subprocess, its banner, its keys, its logs.

(The bootstrap keys file itself, a terminal and a read-only folder:
tests/api/cli/test_bootstrap_keys.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.serving import ROOT, Serving

DONE_MARK = "  curl -s $URL/threads/refund-1/audit"
STORY_TITLE = "The refund story: an agent asks for a $250 refund, a reviewer approves it."
STEP_MARK = "@@ step done @@"


def keys_in_file(path: Path) -> dict[str, str]:
    """The keys of a bootstrap keys file by role: its `HOLDPOINT_<ROLE>_KEY=` lines."""
    keys = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        if not line.startswith("#") and name.endswith("_KEY"):
            keys[name.removeprefix("HOLDPOINT_").removesuffix("_KEY").lower()] = value
    return keys


def exported(lines: list[str]) -> dict[str, str]:
    values = {}
    for line in lines:
        if line.strip().startswith("export "):
            for pair in line.strip().removeprefix("export ").split():
                name, _, value = pair.partition("=")
                values[name] = value
    return values


def story_script(lines: list[str]) -> str:
    """The banner's story as one bash script that stops at the first failure, each step's
    output ended by a marker line, and the ids it picked printed last."""
    story = [line.strip() for line in lines[lines.index(STORY_TITLE) + 1 :]]
    steps = [f"{line}\necho\necho {STEP_MARK}" for line in story if line]
    return "\n".join(["set -euo pipefail", *steps, 'echo "ID=$ID RUN=$RUN"'])


def run_story(lines: list[str]) -> subprocess.CompletedProcess[str]:
    """The banner's story run in bash, as a user pastes it (`story_script`)."""
    return subprocess.run(
        ["bash", "-c", story_script(lines)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_first_start_writes_keys_and_the_story_runs_as_printed(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the banner's story is curl lines")
    store = f"sqlite:///{tmp_path / 'holdpoint.db'}"
    serving = Serving(store)
    lines = serving.banner(DONE_MARK)
    url = exported(lines)["URL"]
    assert any(line.strip() == f"API docs:  {url}/docs" for line in lines)
    keys = keys_in_file(tmp_path / "holdpoint.bootstrap-keys")
    assert set(keys) == {"agent", "reviewer", "auditor"}
    assert f"  keys file: {tmp_path / 'holdpoint.bootstrap-keys'}" in lines

    # When the story's lines run in a shell, as printed
    ran = run_story(lines)

    # Then each step answered, the run the decision began ended the refund, and the
    # audit names the reviewer
    assert ran.returncode == 0, ran.stderr
    *outputs, picked = ran.stdout.split(f"{STEP_MARK}\n")
    ids = dict(pair.split("=", 1) for pair in picked.split())
    created, queue_page, joined, audit = (json.loads(out) for out in outputs if out.strip())
    assert created["thread_id"] == "refund-1"
    assert ids["ID"] in {row["interrupt_id"] for row in queue_page["data"]}
    assert joined["outcome"] == "Refund of $250 processed."
    assert any(
        entry["summary"].startswith("reviewer (reviewer) decided approve")
        for entry in audit["entries"]
    )
    decided = {"run_id": ids["RUN"]}
    code, stderr = serving.stop()
    assert code == 0, stderr
    # One JSON log line per request, with who and what, never a key
    requests = [json.loads(line) for line in stderr.splitlines() if '"request"' in line]
    decision = next(r for r in requests if r["route"] == "/approvals/{interrupt_id}/decision")
    assert decision["principal"] == "reviewer"
    assert decision["thread_id"] == "refund-1"
    assert decision["run_id"] == decided["run_id"]
    assert decision["status"] == 200
    assert {"request_id", "duration_ms", "method", "timestamp"} <= set(decision)
    output = "\n".join([*lines, *serving.rest()])
    for key in keys.values():  # stdout is a pipe, not a terminal: no key printed either
        assert key not in stderr
        assert key[len("hp_") + 13 :] not in stderr  # not even the secret part (it may hold _)
        assert key[len("hp_") + 13 :] not in output
    assert "Receipt checked" not in stderr  # no payloads either

    # A second start finds keys, and makes and prints none
    again = Serving(store)
    lines = again.banner("API keys:")
    assert not any("hp_" in line for line in lines)
    assert lines[-1].startswith(
        f"API keys: the first start's are in {tmp_path / 'holdpoint.bootstrap-keys'}; more with"
    )
    code, _ = again.stop()
    assert code == 0


def test_graphs_from_a_config_file_and_the_command_line(tmp_path):
    (tmp_path / "approvals.py").write_text(
        "from typing import TypedDict\n"
        "from domain.graph import StateGraph, START, END\n"
        "from domain.types import interrupt\n"
        "class S(TypedDict):\n    x: int\n"
        "def ask(state):\n    return {'x': interrupt('ok?')}\n"
        "builder = StateGraph(S)\n"
        "builder.add_node('ask', ask)\n"
        "builder.add_edge(START, 'ask')\n"
        "builder.add_edge('ask', END)\n"
        "graph = builder.compile()\n"
    )
    (tmp_path / "holdpoint.toml").write_text(
        '[graphs]\nasker = "approvals.py:graph"\n[server]\nmax_body_bytes = 2048\n'
    )
    serving = Serving(
        f"sqlite:///{tmp_path / 'h.db'}",
        "--config",
        str(tmp_path / "holdpoint.toml"),
        "--graph",
        f"builder={tmp_path / 'approvals.py'}:builder",
        cwd=tmp_path,
    )
    lines = serving.banner("More with")
    serving.stop()
    graphs_line = next(line for line in lines if "graphs:" in line)
    assert graphs_line.split("graphs:")[1].split() == ["asker,", "builder"]
    assert not any("refund story" in line for line in lines)


def serve_once(tmp_path: Path, *args: str, environment: dict[str, str] | None = None):
    """`holdpoint serve ARGS` on a SQLite store in `tmp_path`, run to its end (a start
    that is refused ends at once)."""
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", "serve", *args],
        cwd=ROOT,
        env={
            **os.environ,
            "HOLDPOINT_STORE": f"sqlite:///{tmp_path / 'h.db'}",
            **(environment or {}),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_no_projector_needs_postgresql(tmp_path):
    result = serve_once(tmp_path, "--no-projector")
    assert result.returncode == 2
    assert "--no-projector needs a PostgreSQL store" in result.stderr


def test_a_graph_that_cannot_be_loaded_is_one_clear_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "api.cli.main", "serve", "--graph", "x=missing.py:graph"],
        cwd=tmp_path,
        env={
            **os.environ,
            "HOLDPOINT_STORE": f"sqlite:///{tmp_path / 'h.db'}",
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("holdpoint: error: Graph 'x': no file")


def test_max_body_bytes_refuses_a_larger_body_with_a_413_problem(tmp_path):
    # Given `holdpoint serve --max-body-bytes 200`
    serving = Serving(f"sqlite:///{tmp_path / 'h.db'}", "--max-body-bytes", "200")
    names = exported(serving.banner(DONE_MARK))
    agent = {"x-api-key": keys_in_file(tmp_path / "h.bootstrap-keys")["agent"]}

    # When the agent sends a body of 200 bytes, then one of 201
    with httpx.Client(base_url=names["URL"], headers=agent, timeout=60) as http:
        padding = '{"metadata": {"note": "%s"}}'
        fits = padding % ("x" * (200 - len(padding % "")))
        fitting = http.post("/threads", content=fits, headers={"content-type": "application/json"})
        larger = http.post(
            "/threads", content=fits + " ", headers={"content-type": "application/json"}
        )

    # Then the first is taken and the second refused, as a problem naming the limit
    assert len(fits) == 200
    assert fitting.status_code == 200, fitting.text
    assert larger.status_code == 413
    assert larger.headers["content-type"] == "application/problem+json"
    assert larger.json()["status"] == 413
    assert "200 bytes" in larger.json()["detail"]
    code, stderr = serving.stop()
    assert code == 0, stderr


@pytest.mark.parametrize(
    ("environment", "args", "message"),
    [
        (
            {"HOLDPOINT_RUN_RATE_LIMIT": "abc"},
            [],
            "holdpoint: error: in the environment: HOLDPOINT_RUN_RATE_LIMIT='abc' is not a "
            "valid float",
        ),
        (
            {},
            ["--max-body-bytes", "0"],
            "holdpoint: error: in the command-line flag --max-body-bytes: Server setting "
            "max_body_bytes must be 1 byte or more: 0",
        ),
        (
            {},
            ["--cpu", "-1"],
            "holdpoint: error: in the command-line flag --cpu: Server setting cpu must be a "
            "CPU's number, 0 or more: -1",
        ),
    ],
    ids=["environment", "flag", "cpu"],
)
def test_a_bad_setting_is_one_line_naming_where_it_came_from(tmp_path, environment, args, message):
    result = serve_once(tmp_path, *args, environment=environment)
    assert result.returncode == 2
    assert result.stderr.strip() == message


def cpus_of_threads(pid: int) -> set[str]:
    """The CPUs each thread of a process may run on (`Cpus_allowed_list`), as listed."""
    listed = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                listed.add(line.split(":", 1)[1].strip())
    return listed


def test_cpu_runs_every_thread_of_the_server_on_that_cpu(tmp_path):
    # Given a machine on which the tests may run on several CPUs
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU: a server kept on it runs as it would anyway")
    cpu = allowed[-1]

    # When `holdpoint serve --cpu N` has started, and serves a request
    serving = Serving(f"sqlite:///{tmp_path / 'h.db'}", "--cpu", str(cpu))
    names = exported(serving.banner(DONE_MARK))
    assert httpx.get(f"{names['URL']}/readyz", timeout=60).status_code == 200

    # Then each of its threads (the event loop, the runs', the store's) runs on that CPU
    assert cpus_of_threads(serving.process.pid) == {str(cpu)}
    code, stderr = serving.stop()
    assert code == 0, stderr


def test_a_cpu_the_process_may_not_use_stops_the_start_before_anything_is_made(tmp_path):
    beyond = max(os.sched_getaffinity(0)) + 1
    result = serve_once(tmp_path, "--cpu", str(beyond))
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"holdpoint: error: CPU {beyond} is not one this process may run on: "
    )
    assert list(tmp_path.iterdir()) == []  # no store, no keys file


def test_a_server_a_test_did_not_stop_is_killed_after_it(tmp_path, request):
    # What tests/conftest.py does after every test: a test that fails before it stops its
    # server leaves no process behind.
    assert "_no_server_left_running" in request.fixturenames  # autouse: after every test
    serving = Serving(f"sqlite:///{tmp_path / 'h.db'}")
    serving.banner(DONE_MARK)
    assert serving.process.poll() is None

    Serving.kill_started()

    assert serving.process.poll() is not None
    assert Serving.started == []


def imported(log: str) -> set[str]:
    """The modules a process imported, from its `-X importtime` lines on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in log.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def langgraph_modules(log: str) -> set[str]:
    return {name for name in imported(log) if name.startswith(("langgraph", "langchain"))}


def test_a_server_of_native_graphs_runs_without_importing_langgraph(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the banner's story is curl lines")
    # Given a server of the seed graphs (native), its imports written to its log
    serving = Serving(f"sqlite:///{tmp_path / 'h.db'}", env={"PYTHONPROFILEIMPORTTIME": "1"})
    lines = serving.banner(DONE_MARK)

    # When the refund story runs through it: a thread, a run to the interrupt, the
    # queue, the decision and the run it begins, the audit
    ran = run_story(lines)
    code, log = serving.stop()

    # Then it served every step, and neither LangGraph nor LangChain was imported
    assert ran.returncode == 0, ran.stderr
    assert code == 0
    assert "domain.graph" in imported(log)  # the log lists the imports
    assert langgraph_modules(log) == set()


def test_a_server_of_a_langgraph_graph_imports_it(tmp_path):
    # Given a real LangGraph graph to serve
    (tmp_path / "echo.py").write_text(
        "from typing import TypedDict\n"
        "from langgraph.graph import StateGraph, START\n"
        "class S(TypedDict):\n"
        "    text: str\n"
        "builder = StateGraph(S)\n"
        "builder.add_node('echo', lambda s: {'text': s['text']})\n"
        "builder.add_edge(START, 'echo')\n"
    )

    # When a server starts on it
    serving = Serving(
        f"sqlite:///{tmp_path / 'h.db'}",
        "--graph",
        f"echo={tmp_path / 'echo.py'}:builder",
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    lines = serving.banner("More with")
    code, log = serving.stop()

    # Then it serves it, on HoldpointSaver
    assert code == 0
    assert any("graphs:" in line and "echo" in line for line in lines)
    assert {"langgraph.graph", "langgraph.checkpoint.holdpoint"} <= langgraph_modules(log)
