"""The server's settings: one frozen object, built once by `holdpoint serve`.

Precedence, highest first: command-line flags, the `[server]` table of a
`holdpoint.toml`, the environment (`HOLDPOINT_STORE`, the rate limits and the
bootstrap keys file of `ENV_SETTINGS`, and `HOLDPOINT_CORS_ALLOW_ORIGINS`), the
defaults below.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from domain.access.roles import Roles, custom_roles
from domain.errors import InvalidRolesError
from domain.record.store import store_url_from_env
from domain.retention.policy import DEFAULT_FLOOR_DAYS
from service.notifications.settings import Notifications, notifications
from service.oidc_settings import OidcSettings, environment_table, oidc_settings

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_BODY_BYTES = 1_048_576
DEFAULT_RUN_RATE_LIMIT, DEFAULT_RUN_BURST = 100.0, 200
DEFAULT_DECISION_RATE_LIMIT, DEFAULT_DECISION_BURST = 50.0, 100
DEFAULT_AUTH_FAILURE_RATE_LIMIT, DEFAULT_AUTH_FAILURE_BURST = 1.0, 100
# Settings also read from the environment (below a holdpoint.toml, above the defaults).
ENV_SETTINGS = {
    "run_rate_limit": "HOLDPOINT_RUN_RATE_LIMIT",
    "run_burst": "HOLDPOINT_RUN_BURST",
    "decision_rate_limit": "HOLDPOINT_DECISION_RATE_LIMIT",
    "decision_burst": "HOLDPOINT_DECISION_BURST",
    "auth_failure_rate_limit": "HOLDPOINT_AUTH_FAILURE_RATE_LIMIT",
    "auth_failure_burst": "HOLDPOINT_AUTH_FAILURE_BURST",
    "bootstrap_keys_file": "HOLDPOINT_BOOTSTRAP_KEYS_FILE",
    "read_window_seconds": "HOLDPOINT_READ_WINDOW_SECONDS",
}
# The browser origins allowed to call the API (CORS), comma-separated in the environment.
CORS_ORIGINS_VARIABLE = "HOLDPOINT_CORS_ALLOW_ORIGINS"
ANY_ORIGIN = "*"


@dataclass(frozen=True)
class ServerSettings:
    """What the HTTP server needs to know, and nothing it can find out itself."""

    store_url: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # No one who shaped what is decided (started, fed, edited or forked the thread) may
    # decide it (domain/oversight/hold_points.py); false turns it off for every served graph, a
    # graph table's `separation_of_duties = false` for one.
    separation_of_duties: bool = True
    # Answers faster than this many seconds are flagged as possible rubber-stamping
    # (Art. 14(4)(b)) in the oversight report, unless a report asks for another floor.
    rubber_stamp_seconds: float = 10.0
    # No retention policy may keep logs fewer days than this (Art. 19, 26(6)): a
    # holdpoint.toml's `[retention] floor_days`, never under the default.
    retention_floor_days: int = DEFAULT_FLOOR_DAYS
    # Run the read models' projector (and the deadline worker) in this process.
    projector: bool = True
    projector_poll: float = 0.2
    # On PostgreSQL, at most one projector batch this often under a stream of commits
    # (`ProjectionRunner.run_forever`): read models up to this much later, in fewer batches.
    projector_gather: float = 0.02
    # How long a read that names a position (`wait_for`) waits for the read models.
    read_wait_timeout: float = 10.0
    # How long a run or a decision waits for another run on the same thread to end.
    busy_wait_timeout: float = 30.0
    # Threads that run graph code, the lead and its helpers (service/run_executor.py): enough
    # for nodes that wait on I/O to overlap (README, "Where it differs from LangGraph's").
    run_workers: int = 32
    # Seconds a run's graph code (or its wait for a thread's lock) may keep the runs behind
    # it waiting (service/run_executor.py): runs go one after another on one thread while their
    # nodes compute, beside it when one waits longer; 0: all at once, up to `run_workers`.
    run_turn: float = 0.01
    # Seconds a node may run before its run records NodeFailed (NodeTimeoutError), for
    # the graphs that set no `step_timeout` of their own; None: no limit.
    step_timeout: float | None = None
    # Runs whose chunks this process keeps in memory for their streams (the runs
    # themselves are in the store).
    runs_kept: int = 10_000
    # Seconds a runner's lease on a thread lasts unless renewed (a third of it between
    # renewals): after a crash, another process takes the run over once it has expired.
    run_lease_seconds: float = 15.0
    # Seconds between a worker's looks at the store's queue and at expired leases.
    run_poll_seconds: float = 1.0
    # Seconds between the scheduler's looks for crons due (service/cron_scheduler.py).
    cron_poll_seconds: float = 1.0
    # Per API key and process (service/rate_limit.py): a burst of requests at once, then a rate
    # per second, on the endpoints that start runs and on decisions; a rate of 0 turns it off.
    run_rate_limit: float = DEFAULT_RUN_RATE_LIMIT
    run_burst: int = DEFAULT_RUN_BURST
    decision_rate_limit: float = DEFAULT_DECISION_RATE_LIMIT
    decision_burst: int = DEFAULT_DECISION_BURST
    # Per client address and process: requests refused 401 (no key, an unknown or revoked
    # one) before the address gets 429 instead, so that a flood records one refusal.
    auth_failure_rate_limit: float = DEFAULT_AUTH_FAILURE_RATE_LIMIT
    auth_failure_burst: int = DEFAULT_AUTH_FAILURE_BURST
    # Where a first start writes the keys it makes (service/bootstrap_keys.py); None: beside
    # a SQLite store's file, else ./holdpoint-bootstrap-keys.
    bootstrap_keys_file: str | None = None
    # Reads of payloads, the queue, timelines, reports and exports are recorded once per
    # reader, thing read and window of this many seconds (domain/oversight/read_logs.py).
    read_window_seconds: int = 300
    # Origins (`https://app.example`, or `*` for any) whose browser pages may call the API
    # (api/http/cors.py); none by default: a page on another origin is refused.
    cors_allow_origins: tuple[str, ...] = ()
    # `[server.notifications]`: webhook targets told of interrupts, the hosts webhooks
    # (a run's too) may reach, and the retries (service/notifications/settings.py).
    notifications: Notifications = field(default_factory=Notifications)
    # The custom roles beside the four built in: a holdpoint.toml's `[roles]` table, each
    # naming its permissions (domain/access/roles.py); recorded at start when they change.
    roles: Roles = field(default_factory=Roles)
    # The one CPU this process runs on (Linux; service/cpu.py), None: any the system
    # gives it. Python runs one thread at a time: on one CPU its threads hand over
    # without moving their working set between cores' caches.
    cpu: int | None = None
    # `[oidc]` (or HOLDPOINT_OIDC_*): signing in to the UI with an OpenID Connect
    # provider beside API keys (service/oidc_settings.py); None: API keys only.
    oidc: OidcSettings | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> ServerSettings:
        settings = cls(store_url=store_url_from_env())
        from_environment: dict[str, Any] = {}
        for name, variable in ENV_SETTINGS.items():
            text = os.environ.get(variable, "").strip()
            if not text:
                continue
            current = getattr(settings, name)
            kind = str if current is None else type(current)
            try:
                from_environment[name] = kind(text)
            except ValueError:
                msg = f"{variable}={text!r} is not a valid {kind.__name__}"
                raise ValueError(msg) from None
        origins = os.environ.get(CORS_ORIGINS_VARIABLE, "")
        if origins.strip():
            listed = [origin.strip() for origin in origins.split(",") if origin.strip()]
            try:
                from_environment["cors_allow_origins"] = cors_origins(listed)
            except ValueError as error:
                raise ValueError(f"{CORS_ORIGINS_VARIABLE}: {error}") from None
        if "issuer" in environment_table(os.environ):  # else a file's [oidc] may complete it
            from_environment["oidc"] = oidc_settings({})
        return settings.updated(**from_environment).updated(**overrides)

    def updated(self, **overrides: Any) -> ServerSettings:
        """A copy with the given fields changed; None values are ignored."""
        known = {k: v for k, v in overrides.items() if v is not None}
        unknown = set(known) - set(self.__dataclass_fields__)
        if unknown:
            msg = f"Unknown server setting {sorted(unknown)[0]!r}"
            raise ValueError(msg)
        if "cors_allow_origins" in known:
            known["cors_allow_origins"] = cors_origins(known["cors_allow_origins"])
        if "notifications" in known:
            known["notifications"] = notifications(known["notifications"])
        if "roles" in known:
            known["roles"] = custom_roles(known["roles"])
        if "oidc" in known:
            known["oidc"] = oidc_settings(known["oidc"])
        oidc = known.get("oidc", self.oidc)
        if oidc is not None:
            oidc.check_roles(known.get("roles", self.roles))
        for name, value in known.items():
            current = getattr(self, name)
            expected: Any = (int, float) if isinstance(current, float) else type(current)
            wrong = isinstance(value, bool) and not isinstance(current, bool)
            if current is not None and (wrong or not isinstance(value, expected)):
                expected = type(current)
                msg = f"Server setting {name} must be of type {expected.__name__}, not {value!r}"
                raise ValueError(msg)
        timeout = known.get("step_timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            msg = f"Server setting step_timeout must be a number of seconds above 0: {timeout!r}"
            raise ValueError(msg)
        body = known.get("max_body_bytes")
        if body is not None and body < 1:
            msg = f"Server setting max_body_bytes must be 1 byte or more: {body!r}"
            raise ValueError(msg)
        workers = known.get("run_workers")
        if workers is not None and workers < 1:
            msg = f"Server setting run_workers must be 1 or more: {workers!r}"
            raise ValueError(msg)
        for name in ("run_lease_seconds", "run_poll_seconds", "cron_poll_seconds"):
            seconds = known.get(name)
            if seconds is not None and seconds <= 0:
                msg = f"Server setting {name} must be a number of seconds above 0: {seconds!r}"
                raise ValueError(msg)
        keys_file = known.get("bootstrap_keys_file")
        if keys_file is not None and (not isinstance(keys_file, str) or not keys_file.strip()):
            msg = f"Server setting bootstrap_keys_file must be a file's path: {keys_file!r}"
            raise ValueError(msg)
        _check_floors(known)
        _check_cpu(known.get("cpu"))
        turn = known.get("run_turn")
        if turn is not None and turn < 0:
            msg = f"Server setting run_turn must be a number of seconds, 0 or more: {turn!r}"
            raise ValueError(msg)
        return replace(self, **known)

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"


def _check_floors(known: dict[str, Any]) -> None:
    floor = known.get("rubber_stamp_seconds")
    if floor is not None and floor < 0:
        msg = f"Server setting rubber_stamp_seconds must be 0 or more seconds: {floor!r}"
        raise ValueError(msg)
    days = known.get("retention_floor_days")
    if days is not None and days < DEFAULT_FLOOR_DAYS:  # as `holdpoint retention` refuses it
        msg = (
            "Server setting retention_floor_days ([retention] floor_days) must be at least "
            f"{DEFAULT_FLOOR_DAYS} days (EU AI Act Art. 19, 26(6)): {days!r}"
        )
        raise ValueError(msg)


def _check_cpu(cpu: object) -> None:
    if cpu is not None and (isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0):
        msg = f"Server setting cpu must be a CPU's number, 0 or more: {cpu!r}"
        raise ValueError(msg)


def roles_in(path: Path) -> Roles:
    """The roles of a holdpoint.toml (`[roles]`), for a command that reads no other
    setting; InvalidRolesError when the file cannot be read or its roles are not valid."""
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidRolesError(f"Cannot read the config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise InvalidRolesError(f"The config file {path} is not valid toml: {error}") from None
    try:
        return custom_roles(config.get("roles"))
    except InvalidRolesError as error:
        raise InvalidRolesError(f"In the config file {path}: {error}") from None


def cors_origins(value: Any) -> tuple[str, ...]:
    """The origins of `value` (a list of them), each as a browser sends it in `Origin`:
    `scheme://host[:port]`, with no path (not even a trailing slash), or `*` for any.
    Refused with the reason: a listed origin that a browser never sends would match
    nothing, silently."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        msg = f"Server setting cors_allow_origins must be a list of origins, not {value!r}"
        raise ValueError(msg)
    origins = []
    for origin in value:
        if origin != ANY_ORIGIN:
            problem = _origin_problem(origin)
            if problem is not None:
                msg = f"Server setting cors_allow_origins: {origin!r} is not an origin: {problem}"
                raise ValueError(msg)
        origins.append(origin)
    return tuple(origins)


def _origin_problem(origin: Any) -> str | None:
    if not isinstance(origin, str):
        return "an origin is a string"
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as error:
        return str(error)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "write it as scheme://host[:port], e.g. https://app.example"
    if parts.path or parts.query or parts.fragment or parts.username or parts.password:
        return "a browser sends scheme://host[:port] only, with no path, not even a slash"
    if origin != origin.lower():
        return "a browser sends it in lower case"
    return None
