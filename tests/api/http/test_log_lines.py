"""The server's JSON log lines: one line per record, whatever a caller sends."""

from __future__ import annotations

import io
import json

import pytest
import structlog

from service.bootstrap import configure_logging


@pytest.fixture
def log_output():
    buffer = io.StringIO()
    saved = structlog.get_config()
    configure_logging(json=True, file=buffer, cache=False)
    try:
        yield buffer
    finally:
        structlog.configure(**saved)


def test_a_line_is_json_and_no_value_breaks_it(log_output):
    # Given values with every kind of line break a reader may split on
    breaks = "a\nb\rc\x0bd\x0ce\x1cf\x85g\u2028h\u2029i"
    # When they are logged
    structlog.get_logger("holdpoint.http").info("request", path=breaks, who="é")
    # Then the record is one line of JSON that gives them back
    lines = log_output.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["path"] == breaks
    assert record["who"] == "é"
    assert {"event", "level", "timestamp"} <= set(record)


def test_what_the_fast_encoder_refuses_is_still_logged(log_output):
    # An integer beyond 64 bits, a non-string key and an object without a JSON form
    structlog.get_logger().info("odd", big=2**70, table={1: "one"}, thing=object())
    record = json.loads(log_output.getvalue())
    assert record["big"] == 2**70
    assert record["table"] == {"1": "one"}
    assert record["thing"].startswith("<object object at")
