"""The CLI starts fast: `holdpoint verify` builds only the integrity subcommands' parser and
imports neither the API nor the read models, with the same help and errors as ever; and a
command that loads no graph does not import LangGraph."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from api.cli.main import INTEGRITY_COMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]


def subcommand_help(parser, name: str) -> str:
    [action] = [a for a in parser._actions if a.dest == "command"]
    return action.choices[name].format_help()


@pytest.mark.parametrize("name", sorted(INTEGRITY_COMMANDS))
def test_an_integrity_command_alone_has_the_help_it_has_among_all(name):
    # When
    alone = subcommand_help(build_parser(name), name)
    among_all = subcommand_help(build_parser(), name)

    # Then
    assert alone == among_all


def test_the_main_help_still_lists_every_command():
    # When
    text = build_parser().format_help()

    # Then
    for name in ("demo", "serve", "db", "keys", "verify", "seal", "export", "report", "replay"):
        assert f"    {name} " in text or f"    {name}\n" in text


def test_the_help_names_the_key_variable_signing_reads():
    # Given
    from api.cli import integrity as integrity_cli  # noqa: PLC0415
    from integrity import signing  # noqa: PLC0415

    # Then
    assert integrity_cli.KEY_VARIABLE == signing.KEY_VARIABLE


def imported_by(argv: list[str], prefixes: tuple[str, ...]) -> tuple[str, list[str]]:
    """`holdpoint ARGV` in a fresh interpreter: its output, and the modules it imported
    whose names start with one of `prefixes`."""
    script = (
        "import sys\n"
        "from api.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout, ast.literal_eval(done.stderr.strip())


def test_verify_imports_neither_the_api_nor_the_read_models_nor_seals():
    # Given
    heavy = ("projections", "fastapi", "api.cli.history", "api.cli.serve")
    heavy += ("integrity.sealing", "integrity.export", "integrity.signing", "cryptography")

    # When
    output, imported = imported_by(["verify", "--help"], heavy)

    # Then
    assert imported == []
    assert output.startswith("usage: holdpoint verify")


@pytest.mark.parametrize("argv", [["--help"], ["keys", "list", "--help"], ["replay", "--help"]])
def test_commands_that_load_no_graph_start_without_langgraph(argv):
    # Given: LangGraph and LangChain take about 0.7 s to import
    # When
    output, imported = imported_by(argv, ("langgraph", "langchain"))

    # Then
    assert imported == []
    assert output.startswith("usage: holdpoint")
