"""docker-compose.yml: no Docker engine runs here, so check what can be checked.

The file parses; every Holdpoint service builds from the one Dockerfile, whose
entrypoint is `holdpoint`; each service's command is a real subcommand; and
the commands are run for real against the test PostgreSQL. The api's
healthcheck is run for real against a running `holdpoint serve`, and the
Dockerfile is read for its data folder (/app/var, the `holdpoint` user's own,
where a first start's keys go).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.api.http.test_serve import DONE_MARK, exported
from tests.conftest import require_postgres
from tests.serving import Serving

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
HOLDPOINT_SERVICES = [name for name, spec in SERVICES.items() if spec.get("build") == "."]
# Subcommands the compose file already runs, still to be built by their issue.
PENDING: dict[str, str] = {}


def holdpoint(*args: str, store: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if store is not None:
        env["HOLDPOINT_STORE"] = store
    return subprocess.run(
        [sys.executable, "-m", "api.cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compose_runs_postgres_api_and_projector_from_one_dockerfile():
    assert {"postgres", "api", "projector", "db-init"} <= set(SERVICES)
    assert set(HOLDPOINT_SERVICES) == {"api", "projector", "db-init"}
    assert 'ENTRYPOINT ["holdpoint"]' in (ROOT / "Dockerfile").read_text()


def test_the_api_leaves_the_read_models_to_the_projector_service():
    # The projector service keeps them up to date; the api does not project them as well
    assert "--no-projector" in SERVICES["api"]["command"]
    assert SERVICES["projector"]["command"] == ["projector"]
    assert SERVICES["projector"]["restart"] == "unless-stopped"


def test_postgres_has_a_health_check_and_a_named_volume():
    postgres = SERVICES["postgres"]
    assert "pg_isready" in postgres["healthcheck"]["test"]
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in COMPOSE["volumes"]


def test_the_servers_wait_for_db_init_and_do_not_create_tables_themselves():
    for name in ("api", "projector"):
        spec = SERVICES[name]
        assert spec["depends_on"]["db-init"]["condition"] == "service_completed_successfully"
        assert spec["environment"]["HOLDPOINT_STORE"].endswith("?create_tables=no")
    assert SERVICES["db-init"]["depends_on"]["postgres"]["condition"] == "service_healthy"


@pytest.mark.parametrize("service", HOLDPOINT_SERVICES)
def test_each_service_command_is_a_holdpoint_subcommand(service):
    command = SERVICES[service]["command"]
    subcommand = command[:2] if command[0] == "db" else command[:1]
    result = holdpoint(*subcommand, "--help")
    if command[0] in PENDING:
        # Not built yet: the test fails once it is, so that PENDING shrinks.
        assert result.returncode == 2, f"{command[0]} exists now: remove it from PENDING"
        assert "invalid choice" in result.stderr
    else:
        assert result.returncode == 0, result.stderr


def compose_store_on_test_server(service: str, test_url: str) -> str:
    """The service's HOLDPOINT_STORE, pointed at the test server and a fresh schema."""
    compose_url = urlsplit(SERVICES[service]["environment"]["HOLDPOINT_STORE"])
    test = urlsplit(test_url)
    query = "&".join(part for part in (test.query, compose_url.query) if part)
    return test._replace(query=query).geturl()


def test_db_init_then_the_demo_with_the_servers_store_settings(postgres_url):
    require_postgres()
    init_url = compose_store_on_test_server("db-init", postgres_url)
    server_url = compose_store_on_test_server("api", postgres_url)
    assert "create_tables=no" in server_url
    # db init creates the tables, and running it again changes nothing
    for _ in range(2):
        result = holdpoint("db", "init", store=init_url)
        assert result.returncode == 0, result.stderr
        assert "Store ready" in result.stdout
        assert "holdpoint:holdpoint@" not in result.stdout
    # a process that may not create tables works on them
    result = holdpoint("demo", store=server_url)
    assert result.returncode == 0, result.stderr
    assert "Chain verified" in result.stdout


def test_a_server_store_without_db_init_fails_clearly(postgres_url):
    require_postgres()
    result = holdpoint("demo", store=compose_store_on_test_server("api", postgres_url))
    assert result.returncode == 2
    assert result.stderr.startswith("holdpoint: error:")
    assert "Traceback" not in result.stderr


def dockerfile_instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (name, arguments), continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), " ".join(line.split()[1:]))
        for line in lines
        if line and not line.startswith("#")
    ]


def test_the_dockerfile_makes_the_data_folder_the_users_own_and_puts_the_keys_there():
    instructions = dockerfile_instructions()
    runs = [args for name, args in instructions if name == "RUN"]
    [made] = [args for args in runs if "/app/var" in args]
    # the user exists first, then /app/var is made as its own, 0700
    assert made.index("useradd --system --home /app holdpoint") < made.index("install -d")
    assert "install -d -o holdpoint -g holdpoint -m 0700 /app/var" in made
    users = [args for name, args in instructions if name == "USER"]
    assert users == ["holdpoint"]
    envs = " ".join(args for name, args in instructions if name == "ENV")
    assert "HOLDPOINT_STORE=sqlite:////app/var/holdpoint.db" in envs
    assert "HOLDPOINT_BOOTSTRAP_KEYS_FILE=/app/var/holdpoint.bootstrap-keys" in envs


def healthcheck_command(port: int) -> list[str]:
    """The api's healthcheck, run here: this Python for the image's python3, and `port`
    for the one compose serves on."""
    check = SERVICES["api"]["healthcheck"]
    assert check["test"][:3] == ["CMD", "python3", "-c"]
    [code] = check["test"][3:]
    assert "http://127.0.0.1:8000/readyz" in code
    return [sys.executable, "-c", code.replace(":8000/", f":{port}/")]


def test_the_api_is_healthy_once_readyz_answers_and_unhealthy_without_a_server(tmp_path):
    # Given the api service's command serves port 8000, which its healthcheck asks
    command = SERVICES["api"]["command"]
    assert command[command.index("--port") + 1] == "8000"
    assert SERVICES["api"]["healthcheck"]["retries"] >= 1

    # When its healthcheck runs against a running `holdpoint serve`
    serving = Serving(f"sqlite:///{tmp_path / 'holdpoint.db'}", cwd=tmp_path)
    port = int(exported(serving.banner(DONE_MARK))["URL"].rsplit(":", 1)[1])
    try:
        healthy = subprocess.run(
            healthcheck_command(port), capture_output=True, text=True, timeout=30, check=False
        )
    finally:
        code, stderr = serving.stop()
    assert code == 0, stderr

    # Then it passes; and once the server is gone, it fails
    assert healthy.returncode == 0, healthy.stderr
    gone = subprocess.run(
        healthcheck_command(port), capture_output=True, text=True, timeout=30, check=False
    )
    assert gone.returncode != 0
