"""`holdpoint ... | head`: given a command whose output outlasts its reader, when the
reader closes the pipe, then the command ends quietly, with the status a shell gives a
command SIGPIPE ended (141), and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TypedDict

from domain.graph import END, START, StateGraph
from domain.record.store import open_store
from tests.cli_process import REPO

STEPS = 600  # about 1,200 lines of history: more than a pipe holds (64 KiB)


class Count(TypedDict):
    n: int


def inc(state: Count) -> Count:
    return {"n": state["n"] + 1}


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    builder = StateGraph(Count)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_conditional_edges(
        "inc", lambda state: "inc" if state["n"] < STEPS else END, {"inc": "inc", END: END}
    )
    with open_store(url) as store:
        config = {"configurable": {"thread_id": "loop"}, "recursion_limit": STEPS + 10}
        builder.compile(checkpointer=store).invoke({"n": 0}, config)

    command = subprocess.Popen(
        [sys.executable, "-m", "api.cli.main", "history", "loop"],
        cwd=REPO,
        env={**os.environ, "HOLDPOINT_STORE": url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert command.stdout is not None
    assert command.stderr is not None
    assert command.stdout.readline().startswith("Thread loop")
    command.stdout.close()  # as `head -1` does

    assert command.wait(timeout=120) == 141
    assert command.stderr.read() == ""
