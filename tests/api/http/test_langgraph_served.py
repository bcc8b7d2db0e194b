"""A real LangGraph graph served by Holdpoint: given `holdpoint serve` with a LangGraph
StateGraph (on HoldpointSaver over the server's store), when clients run it and reviewers
decide over HTTP, then it behaves as a native graph does: the queue, decisions by the
key's identity, exactly one winner of racing decisions, state and history, the record."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from domain.access.keyring import Keyring
from domain.record.store import open_store
from langgraph.checkpoint.holdpoint import HoldpointSaver
from service.errors import EngineConfigError
from service.langgraph_app import LangGraphApp
from tests.api.http_harness import Server, postgres_schema_url, running_server
from tests.saver.langgraph_graphs import refund_builder

GRAPH = "refund-lg"


def langgraph_graphs(store: Any) -> dict[str, Any]:
    return {GRAPH: LangGraphApp(refund_builder().compile(), GRAPH, store)}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request, tmp_path):
    if request.param == "sqlite":
        with running_server(f"sqlite:///{tmp_path / 'h.db'}", extra=langgraph_graphs) as s:
            yield s
        return
    with postgres_schema_url() as url, running_server(url, extra=langgraph_graphs) as s:
        yield s


def paused(server: Server, thread_id: str = "lg-1", amount: int = 150) -> dict[str, Any]:
    with server.http("agent") as agent:
        agent.post("/threads", json={"thread_id": thread_id, "metadata": {"graph_id": GRAPH}})
        answer = agent.post(
            f"/threads/{thread_id}/runs/wait",
            json={"assistant_id": GRAPH, "input": {"amount": amount}},
        )
    assert answer.status_code == 200, answer.text
    return answer.json()


def pending(server: Server) -> list[dict[str, Any]]:
    with server.http("reviewer") as reviewer:
        return list(reviewer.get("/approvals").json()["data"])


def test_a_run_pauses_at_the_interrupt_and_the_queue_shows_it(server):
    output = paused(server)

    assert output["amount"] == 150
    interrupt = output["__interrupt__"][0]
    assert interrupt["value"] == {"question": "Approve the refund?", "amount": 150}
    items = pending(server)
    assert [(i["interrupt_id"], i["thread_id"], i["graph_id"]) for i in items] == [
        (interrupt["id"], "lg-1", GRAPH)
    ]
    assert items[0]["payload"] == {"question": "Approve the refund?", "amount": 150}


def test_a_decision_resumes_the_graph_and_the_record_says_who(server):
    interrupt_id = paused(server)["__interrupt__"][0]["id"]

    with server.http("reviewer") as reviewer:
        decided = reviewer.post(
            f"/approvals/{interrupt_id}/decision",
            json={"decision": "approve", "reason": "Receipt checked"},
        )
        assert decided.status_code == 200, decided.text
        run_id = decided.json()["run_id"]
        joined = reviewer.get(f"/threads/lg-1/runs/{run_id}/join").json()
        state = reviewer.get("/threads/lg-1/state").json()

    assert joined["log"] == ["reviewed: True", "paid 150"]
    assert state["values"] == {"amount": 150, "log": ["reviewed: True", "paid 150"]}
    assert state["next"] == []
    resumed = [
        e for e in server.store.thread_events("lg-1") if type(e).__name__ == "InterruptResumed"
    ]
    assert len(resumed) == 1
    assert (resumed[0].actor["id"], resumed[0].decision, resumed[0].reason) == (
        "reviewer",
        "approve",
        "Receipt checked",
    )
    assert pending(server) == []
    assert server.store.verify_chain("lg-1").ok


def test_an_approval_of_a_question_edited_since_is_recorded_and_the_node_asks_anew(server):
    # Given a reviewer edits the amount after the queue showed 150
    asked = paused(server)["__interrupt__"][0]
    with server.http("reviewer2") as reviewer2:
        edited = reviewer2.post("/threads/lg-1/state", json={"values": {"amount": 90_000}})
        assert edited.status_code == 200, edited.text

    # When another reviewer approves the question shown
    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{asked['id']}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        joined = reviewer.get(f"/threads/lg-1/runs/{decided.json()['run_id']}/join").json()

    # Then nothing is paid: the node asks anew, about the new amount, a pending approval
    # of its own
    assert "paid 90000" not in joined.get("log", [])
    [again] = joined["__interrupt__"]
    assert again["value"] == {"question": "Approve the refund?", "amount": 90_000}
    assert [item["interrupt_id"] for item in pending(server)] == [again["id"]]
    # which, decided, pays what it asked about
    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{again['id']}/decision", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        joined = reviewer.get(f"/threads/lg-1/runs/{decided.json()['run_id']}/join").json()
    assert joined["log"] == ["reviewed: True", "paid 90000"]
    assert server.store.verify_chain("lg-1").ok


def test_a_run_on_from_a_question_asked_anew_hands_langgraph_no_stale_answer(server):
    # Given a question decided after an edit, which the node then asked anew
    asked = paused(server)["__interrupt__"][0]
    with server.http("reviewer2") as reviewer2:
        reviewer2.post("/threads/lg-1/state", json={"values": {"amount": 90_000}})
    with server.http("reviewer") as reviewer:
        decided = reviewer.post(f"/approvals/{asked['id']}/decision", json={"decision": "approve"})
        reviewer.get(f"/threads/lg-1/runs/{decided.json()['run_id']}/join")
    [again] = pending(server)

    # When an agent runs the thread on with no input
    with server.http("agent") as agent:
        ran = agent.post("/threads/lg-1/runs/wait", json={"assistant_id": GRAPH})

    # Then the node asks the same question again, and nothing else happens
    assert ran.status_code == 200, ran.text
    assert [i["id"] for i in ran.json()["__interrupt__"]] == [again["interrupt_id"]]
    assert [item["interrupt_id"] for item in pending(server)] == [again["interrupt_id"]]


def test_of_racing_decisions_one_wins_and_the_node_runs_once(server):
    interrupt_id = paused(server)["__interrupt__"][0]["id"]

    def decide(who: str) -> int:
        with server.http(who) as client:
            return client.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            ).status_code

    with ThreadPoolExecutor(6) as pool:
        codes = sorted(pool.map(decide, ["reviewer", "reviewer2"] * 3))

    assert codes.count(200) == 1
    assert set(codes) - {200} == {409}
    events = server.store.thread_events("lg-1")
    assert sum(type(e).__name__ == "InterruptResumed" for e in events) == 1
    with server.http("reviewer") as reviewer:
        reviewer.get(f"/threads/lg-1/runs/{_last_run(server)}/join")
    paid = [e for e in server.store.thread_events("lg-1") if getattr(e, "node", None) == "pay"]
    assert len(paid) == 1


def _last_run(server: Server) -> str:
    with server.http("reviewer") as reviewer:
        return str(reviewer.get("/threads/lg-1/runs").json()[0]["run_id"])


def test_the_starter_may_not_decide_its_own_thread(server):
    interrupt_id = paused(server)["__interrupt__"][0]["id"]

    with server.http("admin") as admin:  # the admin did not start it: may decide
        assert admin.get("/threads/lg-1").status_code == 200
    with server.http("agent") as agent:
        refused = agent.post(f"/approvals/{interrupt_id}/decision", json={"decision": "approve"})

    assert refused.status_code == 403
    assert pending(server)[0]["interrupt_id"] == interrupt_id


def test_the_official_sdk_drives_it_state_and_history_included(server):
    paused(server)
    client = server.sdk("reviewer")

    done = client.runs.wait("lg-1", GRAPH, command={"resume": True})
    history = client.threads.get_history("lg-1")
    state = client.threads.get_state("lg-1")

    assert done["log"] == ["reviewed: True", "paid 150"]
    assert state["values"]["log"] == ["reviewed: True", "paid 150"]
    assert [h["metadata"]["source"] for h in history][-1] == "input"
    past = client.threads.get_state("lg-1", checkpoint_id=history[-2]["checkpoint_id"])
    assert past["next"] == ["__start__"] or past["next"] == ["review"]


def test_a_run_from_a_past_checkpoint_branches_the_thread_and_asks_again(server):
    first = paused(server)["__interrupt__"][0]["id"]
    client = server.sdk("reviewer")
    client.runs.wait("lg-1", GRAPH, command={"resume": True})
    history = client.threads.get_history("lg-1")
    before_review = next(h for h in history if h["next"] == ["review"])

    agent = server.sdk("agent")
    again = agent.runs.wait("lg-1", GRAPH, input=None, checkpoint_id=before_review["checkpoint_id"])

    assert again["__interrupt__"][0]["id"] != first  # the review asks again, on the branch
    assert [item["interrupt_id"] for item in pending(server)] == [again["__interrupt__"][0]["id"]]
    assert client.threads.get_state("lg-1")["next"] == ["review"]
    assert server.store.verify_chain("lg-1").ok


def paid(server: Server) -> str:
    """lg-1 asked, approved by the reviewer and paid; the id of its checkpoint between the
    answer and the payment (where the reviewer's decision still governs the run)."""
    paused(server)
    server.sdk("reviewer").runs.wait("lg-1", GRAPH, command={"resume": True})
    history = server.sdk("reviewer").threads.get_history("lg-1")
    return str(next(h for h in history if h["next"] == ["pay"])["checkpoint_id"])


def refusals(server: Server) -> list[tuple[str, str]]:
    return [(r.reason, r.action) for r in Keyring(server.store).refusals()]


@pytest.mark.parametrize(
    "run",
    [{"input": None}, {"command": {"update": {"amount": 1}}}],
    ids=["continue", "command-update"],
)
def test_a_run_from_a_checkpoint_past_a_decision_needs_who_may_decide_it(server, run):
    # Given a paid refund, and its checkpoint between the reviewer's answer and the payment
    past_the_answer = paid(server)
    log = server.sdk("reviewer").threads.get_state("lg-1")["values"]["log"]

    # When the agent runs the thread on from there (it would pay again under that answer)
    with server.http("agent") as agent:
        again = agent.post(
            "/threads/lg-1/runs/wait",
            json={"assistant_id": GRAPH, **run, "checkpoint_id": past_the_answer},
        )

    # Then it is refused, on record, and nothing ran
    assert again.status_code == 403, again.text
    assert "a fork there would run under that decision" in again.json()["detail"]
    assert refusals(server) == [("hold_point", "POST /threads/lg-1/runs/wait")]
    assert server.sdk("reviewer").threads.get_state("lg-1")["values"]["log"] == log


def test_an_edit_from_a_checkpoint_past_a_decision_needs_who_may_decide_it(server):
    past_the_answer = paid(server)

    with server.http("agent") as agent:
        edit = agent.post(
            "/threads/lg-1/state", json={"values": {"amount": 1}, "checkpoint_id": past_the_answer}
        )

    assert edit.status_code == 403, edit.text
    assert refusals(server) == [("hold_point", "POST /threads/lg-1/state")]
    assert server.sdk("reviewer").threads.get_state("lg-1")["values"]["amount"] == 150


def test_a_command_goto_past_the_hold_point_is_refused_on_record(server):
    # Given a paid refund
    paid(server)

    # When the agent sends the thread to `pay` again, past `review`
    with server.http("agent") as agent:
        goto = agent.post(
            "/threads/lg-1/runs/wait", json={"assistant_id": GRAPH, "command": {"goto": "pay"}}
        )

    # Then it is refused, on record, and nothing was paid again
    assert goto.status_code == 403, goto.text
    assert "where the graph does not start it (it starts at 'review'" in goto.json()["detail"]
    assert refusals(server) == [("hold_point", "POST /threads/lg-1/runs/wait")]
    log = server.sdk("reviewer").threads.get_state("lg-1")["values"]["log"]
    assert log == ["reviewed: True", "paid 150"]


def test_a_command_goto_where_the_graph_starts_runs_a_new_thread(server):
    # Given a new thread, never run
    with server.http("agent") as agent:
        agent.post("/threads", json={"thread_id": "lg-g", "metadata": {"graph_id": GRAPH}})

        # When the agent starts it with a goto to where the graph itself starts it
        command = {"update": {"amount": 5}, "goto": "review"}
        goto = agent.post(
            "/threads/lg-g/runs/wait", json={"assistant_id": GRAPH, "command": command}
        )

    # Then the graph's own edges decide (the saver is told them: the thread has no record
    # of its start yet), and the review asks its question
    assert goto.status_code == 200, goto.text
    assert refusals(server) == []
    assert [item["node"] for item in pending(server)] == ["review"]


def test_the_starters_own_answer_in_a_run_is_refused_on_record(server):
    # Given a thread the admin started, paused at its question
    with server.http("admin") as admin:
        admin.post("/threads", json={"thread_id": "lg-a", "metadata": {"graph_id": GRAPH}})
        admin.post("/threads/lg-a/runs/wait", json={"assistant_id": GRAPH, "input": {"amount": 5}})

        # When the admin answers it in a run
        answer = admin.post(
            "/threads/lg-a/runs/wait", json={"assistant_id": GRAPH, "command": {"resume": True}}
        )

    # Then separation of duties refuses it, on record
    assert answer.status_code == 403
    assert refusals(server) == [("separation_of_duties", "POST /threads/lg-a/runs/wait")]


def test_checkpoint_metadata_has_the_keys_langgraphs_server_adds(server):
    paused(server, "lg-meta")
    agent = server.sdk("agent")
    (run,) = agent.runs.list("lg-meta")
    metadata = agent.threads.get_state("lg-meta")["metadata"]
    assert {key: metadata[key] for key in ("thread_id", "graph_id", "run_id", "user_id")} == {
        "thread_id": "lg-meta",
        "graph_id": GRAPH,
        "run_id": run["run_id"],
        "user_id": "agent",
    }
    assert metadata["assistant_id"] == run["assistant_id"]
    # recorded with the checkpoint, in the thread's own events
    saved = [
        e for e in server.store.thread_events("lg-meta") if type(e).__name__ == "CheckpointSaved"
    ]
    assert saved[-1].metadata["run_id"] == run["run_id"]


def paused_in_python(url: str, graph_id: str, thread_id: str) -> str:
    """A real LangGraph graph's thread recorded as `graph_id`, paused at its question, on
    the store at `url` before a server starts on it; its interrupt's id."""
    with open_store(url) as store:
        saver = HoldpointSaver(store, graph_id=graph_id)
        refund_builder().compile(checkpointer=saver).invoke(
            {"amount": 300}, {"configurable": {"thread_id": thread_id}}
        )
        [interrupt_id] = store.thread(thread_id).interrupts
    return str(interrupt_id)


@pytest.mark.parametrize(
    ("graph_id", "problem", "detail"),
    [
        ("refund", "other-engine", "the native engine cannot continue it"),
        ("gone", "graph-not-served", "its events and audit can be read, not run"),
    ],
    ids=["served-natively", "not-served"],
)
def test_a_thread_its_graph_no_longer_runs_is_read_from_its_record_not_decided(
    tmp_path, graph_id, problem, detail
):
    # Given a real LangGraph graph's thread paused under a graph id this server serves with
    # the native engine (its seed "refund", as after a redeployment) or does not serve
    url = f"sqlite:///{tmp_path / 'h.db'}"
    interrupt_id = paused_in_python(url, graph_id, "lg-old")
    with running_server(url) as server:
        before = server.services.store.recorder.max_notification_id()

        # When a reviewer decides its question, and reads its state and its events
        with server.http("reviewer") as reviewer:
            answer = reviewer.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            )
            state = reviewer.get("/threads/lg-old/state")
        written = server.services.store.recorder.max_notification_id() - before
        with server.http("auditor") as auditor:
            events = auditor.get("/threads/lg-old/events")

        # Then the decision and the state are refused, saying why, and nothing is written:
        # the question stays open; its events can be read
        assert (answer.status_code, state.status_code, written) == (409, 409, 0), answer.text
        assert answer.json()["type"].endswith(f"/{problem}")
        assert state.json()["type"].endswith(f"/{problem}")
        assert detail in answer.json()["detail"]
        assert server.services.store.thread("lg-old").status == "interrupted"
        assert events.status_code == 200


def four_eyes_graphs(store: Any) -> dict[str, Any]:
    app = LangGraphApp(refund_builder().compile(), GRAPH, store)
    app.set_oversight(approvals=2)  # as `approvals = 2` in its holdpoint.toml table
    return {GRAPH: app}


def test_a_graphs_four_eyes_bind_its_langgraph_interrupts(tmp_path):
    with running_server(f"sqlite:///{tmp_path / 'h.db'}", extra=four_eyes_graphs) as server:
        # Given a LangGraph graph served with two approvals for each interrupt, paused
        interrupt_id = paused(server)["__interrupt__"][0]["id"]
        assert [(i["approvals_needed"], i["approvals_given"]) for i in pending(server)] == [(2, 0)]

        # When one reviewer approves, then the same one again
        with server.http("reviewer") as reviewer:
            first = reviewer.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            )
            again = reviewer.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            )

        # Then nothing runs until a second principal concurs
        assert first.json()["approvals"] == {"given": 1, "needed": 2}
        assert first.json()["resumed"] is False
        assert again.status_code == 403
        assert server.sdk("reviewer").threads.get_state("lg-1")["values"]["log"] == []
        with server.http("reviewer2") as reviewer2:
            second = reviewer2.post(
                f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
            )
            run = second.json()["run"]["run_id"]
            joined = reviewer2.get(f"/threads/lg-1/runs/{run}/join").json()
        assert second.json()["resumed"] is True
        assert joined["log"] == ["reviewed: True", "paid 150"]


def test_a_langgraph_graphs_four_eyes_hold_across_two_servers_on_one_database():
    # Given two servers on one PostgreSQL store, each serving the LangGraph graph with two
    # approvals for each interrupt, and a thread paused at its question
    with (
        postgres_schema_url() as url,
        running_server(url, extra=four_eyes_graphs) as one,
        running_server(url, extra=four_eyes_graphs) as two,
    ):
        interrupt_id = paused(one)["__interrupt__"][0]["id"]

        # When two reviewers approve at once, one on each server; and each once more
        calls = [(one, "reviewer"), (two, "reviewer2"), (two, "reviewer"), (one, "reviewer2")]

        def approve(call: tuple[Server, str]) -> Any:
            server, who = call
            with server.http(who) as reviewer:
                return reviewer.post(
                    f"/approvals/{interrupt_id}/decision", json={"decision": "approve"}
                )

        with ThreadPoolExecutor(len(calls)) as pool:
            answers = list(pool.map(approve, calls))
        resumed = [a.json()["run"]["run_id"] for a in answers if a.json().get("resumed")]
        with one.http("reviewer") as reviewer:
            joined = [reviewer.get(f"/threads/lg-1/runs/{run}/join").json() for run in resumed]

        # Then two approvals by two principals are recorded, and the payment ran once
        events = one.store.thread_events("lg-1")
        answered = [
            e for e in events if type(e).__name__ in ("InterruptApproved", "InterruptResumed")
        ]
        assert sorted(e.actor["id"] for e in answered) == ["reviewer", "reviewer2"]
        assert [type(e).__name__ for e in answered] == ["InterruptApproved", "InterruptResumed"]
        assert sorted(a.status_code for a in answers)[:2] == [200, 200]
        assert len(resumed) == 1
        assert joined[0]["log"] == ["reviewed: True", "paid 150"]
        assert [e.node for e in events if type(e).__name__ == "NodeCompleted"].count("pay") == 1


@pytest.mark.parametrize(
    "forged", ["__pregel_resume_map", "__pregel_checkpointer", "checkpoint_map"]
)
def test_a_run_may_not_set_the_engines_own_keys(server, forged):
    # A resume map in the config would hand the node its answer before any rule of the
    # hold point saw it: here an agent's key, without the reviewer's authority.
    interrupt_id = paused(server)["__interrupt__"][0]["id"]

    with server.http("agent") as agent:
        refused = agent.post(
            "/threads/lg-1/runs/wait",
            json={
                "assistant_id": GRAPH,
                "input": None,
                "config": {"configurable": {forged: {interrupt_id: True}}},
            },
        )
        state = agent.get("/threads/lg-1/state").json()

    assert refused.status_code == 422, refused.text
    assert forged in refused.json()["detail"]
    assert state["values"]["log"] == []
    assert state["next"] == ["review"]
    assert [item["interrupt_id"] for item in pending(server)] == [interrupt_id]


def test_a_runs_configurable_is_an_object_or_a_422_recording_nothing(server):
    head = server.head()
    with server.http("agent") as agent:
        refused = agent.post(
            "/runs/wait",
            json={"assistant_id": GRAPH, "input": {"amount": 5}, "config": {"configurable": [1]}},
        )

    assert refused.status_code == 422, refused.text
    assert "config.configurable must be an object" in refused.text
    assert server.head() == head


def test_the_engines_own_keys_are_refused_however_a_run_comes(tmp_path):
    # Crons, decisions and assistants' configs all pass through run_config.
    with open_store(f"sqlite:///{tmp_path / 'h.db'}") as store:
        app = LangGraphApp(refund_builder().compile(), GRAPH, store)
        with pytest.raises(EngineConfigError, match="__pregel_resume_map"):
            app.run_config({"configurable": {"thread_id": "t", "__pregel_resume_map": {}}})
