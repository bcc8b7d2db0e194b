"""From a LangGraph run body to a RunRequest: the graph, the input, the config.

A run with `command.resume` answers interrupts, so it needs the permission to
decide; any other run needs the agent's permission. Which of the two is
checked first, from the body alone (`run_permission`), before any graph or
thread is looked up. The hold points' own rules (the interrupt's required
role, separation of duties, a reason, a decision that matches its value, who
may change a thread that stands at one) are the domain's, checked as the run
begins, which records their refusals; the other refusals of an answer (an
unknown thread, a lost race) are recorded here as a decision's are
(`api.http.decisions.record_refused_answer`). The actor always comes from the API key: an `actor` in
the body's config is dropped.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from fastapi import Request

from api.http.auth import Permission, action_of
from api.http.problems import Problem
from api.http.schemas import RunCreate
from domain.access.identity import Principal
from domain.assistants.assistant import ASSISTANT_KEYS
from domain.engine.runtime import REQUEST_KEY
from domain.errors import HoldpointError, ThreadNotFoundError
from domain.record.thread_ids import thread_id_problem
from domain.types import Command
from service.assistant_catalog import Found, run_config
from service.langgraph_app import SUBGRAPHS_KEY, LangGraphApp, check_engine_keys
from service.notifications.hosts import HostRefusedError, check_url
from service.reservations import Reservation
from service.runs import STRATEGIES, RunRequest, ServedGraph, run_context
from service.services import Services

STREAM_MODES = ("values", "updates")  # the native engine's
# A real LangGraph graph's, as LangGraph's server offers them (service/langgraph_run.py).
LANGGRAPH_STREAM_MODES = (
    "values",
    "updates",
    "messages",
    "messages-tuple",
    "custom",
    "debug",
    "events",
    "checkpoints",
    "tasks",
)
RESERVED_CONFIGURABLE = (
    "actor",
    "thread_id",
    "run_id",
    "checkpoint_id",
    "idempotency_key",
    REQUEST_KEY,
)
# Where a resume run carries what a decision's body does (`api.http.decisions.answer_problem`).
RUN_FIELDS = {
    "decision": "body.config.configurable.decision",
    "resume": "body.command.resume",
    "reason": "body.config.configurable.reason",
}


def stream_modes(value: str | list[str], graph: ServedGraph) -> tuple[str, ...]:
    """The run's stream modes: those the graph's engine streams."""
    modes = (value,) if isinstance(value, str) else tuple(dict.fromkeys(value))
    offered = LANGGRAPH_STREAM_MODES if isinstance(graph, LangGraphApp) else STREAM_MODES
    unknown = [mode for mode in modes if mode not in offered]
    if unknown:
        engine = (
            "a real LangGraph graph" if isinstance(graph, LangGraphApp) else "the native engine"
        )
        msg = (
            f"Invalid body.stream_mode: {unknown[0]!r} is not supported by {engine}; "
            f"use {', '.join(offered)}"
        )
        raise Problem(422, msg, code="invalid-request")
    return modes or ("values",)


def graph_input(body: RunCreate) -> Any:
    if body.command is not None and body.input is not None:
        msg = "Invalid body.command: send input or command, not both"
        raise Problem(422, msg, code="invalid-request")
    if body.command is None:
        return body.input
    command = body.command
    if command.resume is None and command.update is None and not command.goto:
        msg = "Invalid body.command: give resume, update or goto"
        raise Problem(422, msg, code="invalid-request")
    return Command(resume=command.resume, update=command.update, goto=command.goto or ())


# LangGraph's run options Holdpoint does not have yet: refused by name when set, never
# accepted and ignored (the SDKs send none of them unless asked).
UNSUPPORTED_OPTIONS = {
    "on_completion": "a stateless run's thread is kept, as the record is append-only",
}


def refuse_unsupported_options(body: RunCreate) -> None:
    extra = body.model_extra or {}
    for name, why in UNSUPPORTED_OPTIONS.items():
        if extra.get(name) is not None and not (name == "on_completion" and extra[name] == "keep"):
            msg = f"Invalid body.{name}: not supported by Holdpoint ({why})"
            raise Problem(422, msg, code="invalid-request")


MAX_DELAY_SECONDS = 366 * 86400


def after_seconds_of(body: RunCreate) -> float:
    """`after_seconds`: how long the run waits in the queue before it may be taken."""
    delay = (body.model_extra or {}).get("after_seconds")
    if delay is None:
        return 0.0
    if (
        isinstance(delay, bool)
        or not isinstance(delay, int | float)
        or not 0 <= delay <= MAX_DELAY_SECONDS
    ):
        msg = f"Invalid body.after_seconds: a number of seconds from 0 to {MAX_DELAY_SECONDS}"
        raise Problem(422, msg, code="invalid-request")
    return float(delay)


def webhook_of(body: RunCreate) -> str | None:
    webhook = (body.model_extra or {}).get("webhook")
    if webhook is not None and not isinstance(webhook, str):
        raise Problem(422, "Invalid body.webhook: a URL", code="invalid-request")
    return webhook


def check_webhook(services: Services, webhook: str | None) -> None:
    """A run's (or a cron's) webhook: a host the server may call, or a 422 saying why
    not (service/notifications/hosts.py)."""
    if webhook is None:
        return
    try:
        check_url(webhook, services.settings.notifications)
    except HostRefusedError as error:
        msg = f"Invalid body.webhook: not called, {error}"
        raise Problem(422, msg, code="invalid-request") from None


def is_resume(body: RunCreate) -> bool:
    return body.command is not None and body.command.resume is not None


def run_permission(body: RunCreate) -> Permission:
    """What the caller must hold: a resume answers interrupts, any other run runs."""
    return Permission.DECIDE if is_resume(body) else Permission.RUN


class NoThreadToRunError(ThreadNotFoundError):
    """A run on a thread id that names no thread, and no "if_not_exists": "create"."""

    def __init__(self, thread_id: str) -> None:
        HoldpointError.__init__(
            self,
            f"Thread {thread_id!r} not found: create it with POST /threads, "
            'or send "if_not_exists": "create"',
        )
        self.thread_id = thread_id


def prepare_run(
    services: Services,
    request: Request,
    principal: Principal,
    thread_id: str | None,
    body: RunCreate,
    *,
    streamed: bool = False,
) -> RunRequest:
    """Check the request against the thread; raise the problem, or return the run.

    The caller has checked `run_permission` already; the hold points' rules are the
    domain's, checked as the run begins.
    """
    refuse_unsupported_options(body)
    assistant = services.assistant(body.assistant_id)
    graph = services.graph_of(assistant)
    if body.interrupt_before or body.interrupt_after:
        msg = (
            "Invalid body.interrupt_before: static breakpoints are not supported; "
            "call interrupt() in the node where a human must decide"
        )
        raise Problem(422, msg, code="invalid-request")
    modes = stream_modes(body.stream_mode, graph)
    strategy = body.multitask_strategy or "reject"
    if strategy not in STRATEGIES:
        msg = (
            f"Invalid body.multitask_strategy: {strategy!r} is not supported (it would delete "
            "the running run's events); use reject (the default: 409 while another run "
            "holds the thread), enqueue or interrupt"
        )
        raise Problem(422, msg, code="invalid-request")
    run_input = graph_input(body)
    stateless = thread_id is None
    thread_id = thread_id or str(uuid4())
    thread = services.store.thread(thread_id)
    reservation = None if thread is not None else services.reservations.get(thread_id)
    if thread is None and reservation is None and not stateless and body.if_not_exists != "create":
        raise NoThreadToRunError(thread_id)
    if thread is None and reservation is None and not stateless:
        problem = thread_id_problem(thread_id)
        if problem is not None:  # the run would record a thread that no URL can name
            raise Problem(422, f"Invalid path.thread_id: {problem}", code="invalid-request")
    if thread is not None and thread.graph_id != graph.graph_id:
        msg = (
            f"Invalid body.assistant_id: thread {thread_id!r} runs graph "
            f"{thread.graph_id!r}, not {graph.graph_id!r}"
        )
        raise Problem(422, msg, code="invalid-request")
    config, context = _config(request, principal, thread_id, body, assistant, reservation)
    if body.stream_subgraphs:
        if not isinstance(graph, LangGraphApp):
            msg = "Invalid body.stream_subgraphs: the native engine's graphs have no subgraphs"
            raise Problem(422, msg, code="invalid-request")
        config[SUBGRAPHS_KEY] = True
    run_request = RunRequest(
        graph=graph,
        thread_id=thread_id,
        input=run_input,
        config=config,
        stream_modes=modes,
        assistant_id=assistant.assistant_id,
        metadata={
            **(body.metadata or {}),
            "graph_id": graph.graph_id,
            "assistant_id": assistant.assistant_id,
            **assistant.run_keys(),
        },
        kwargs=_kwargs(body, modes, stateless),
        streamed=streamed,
        thread_as_read=thread,
        multitask_strategy=strategy,
        context=context,
        delay=after_seconds_of(body),
    )
    try:  # made the graph's context_schema as it runs; a context that does not fit: 422
        run_context(run_request)
    except (TypeError, ValueError) as error:
        msg = f"Invalid body.context: it does not fit the graph's context_schema ({error})"
        raise Problem(422, msg, code="invalid-request") from None
    return run_request


def _config(
    request: Request,
    principal: Principal,
    thread_id: str,
    body: RunCreate,
    assistant: Found,
    reservation: Reservation | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The run's config and context: the caller's over its assistant's, with what the
    run records (its thread, actor, request and metadata)."""
    user_config, context = run_config(assistant, dict(body.config or {}), body.context)
    check_engine_keys(user_config.get("configurable") or {})
    configurable = {
        key: value
        for key, value in (user_config.get("configurable") or {}).items()
        if key not in RESERVED_CONFIGURABLE
    }
    configurable.update(
        thread_id=thread_id,
        actor=principal.as_actor(),
        **{REQUEST_KEY: {"action": action_of(request), "target": thread_id}},
    )
    checkpoint_id = body.checkpoint_id or (
        body.checkpoint.checkpoint_id if body.checkpoint else None
    )
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    key = request.headers.get("idempotency-key")
    if key and is_resume(body):
        configurable["idempotency_key"] = key
    thread_metadata = dict(reservation.metadata if reservation else body.metadata or {})
    for name in ("graph_id", *ASSISTANT_KEYS):
        thread_metadata.pop(name, None)
    thread_metadata.update(assistant.run_keys())  # recorded on the thread it runs
    config: dict[str, Any] = {"configurable": configurable, "metadata": thread_metadata}
    if "recursion_limit" in user_config:
        config["recursion_limit"] = user_config["recursion_limit"]
    return config, context


def _kwargs(body: RunCreate, modes: tuple[str, ...], stateless: bool) -> dict[str, Any]:
    """The run's arguments as LangGraph's server shows them in `Run.kwargs`."""
    return {
        "input": body.input,
        "command": None if body.command is None else body.command.model_dump(exclude_none=True),
        "config": body.config or {},
        "context": body.context or {},
        "stream_mode": list(modes),
        "interrupt_before": None,
        "interrupt_after": None,
        "webhook": webhook_of(body),
        "feedback_keys": None,
        "temporary": stateless,
        "subgraphs": body.stream_subgraphs,
        "resumable": False,
        "checkpoint_during": True,
        "durability": "sync",
    }
