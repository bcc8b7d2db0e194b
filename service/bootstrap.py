"""Wiring done once per process: logging now, the app's objects later."""

from __future__ import annotations

import importlib.util
import json as std_json
import logging
import sys
from typing import Any, TextIO

import orjson
import structlog
from structlog.tracebacks import ExceptionDictTransformer

# Line breaks for str.splitlines() that JSON lets through unescaped (orjson escapes the
# C0 controls, as JSON must).
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def configure_logging(
    *,
    json: bool | None = None,
    level: int = logging.INFO,
    file: TextIO | None = None,
    cache: bool = True,
) -> None:
    """Configure structlog once: readable on a terminal, JSON otherwise, to `file` (stderr).

    Tracebacks never show local variables: a frame's locals hold request headers,
    and so API keys. `cache=False` lets a test configure logging more than once.
    """
    if json is None:
        json = not sys.stderr.isatty()
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json:
        tracebacks = ExceptionDictTransformer(show_locals=False)
        processors += [
            structlog.processors.ExceptionRenderer(tracebacks),
            structlog.processors.JSONRenderer(serializer=_dumps),
        ]
    else:
        processors.append(structlog.dev.ConsoleRenderer(exception_formatter=_console_tracebacks()))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=file or sys.stderr),
        cache_logger_on_first_use=cache,
    )


def _dumps(event: Any, **kwargs: Any) -> str:
    """A log line as JSON, by orjson (a request's line in two thirds of the time); what
    orjson refuses (an integer beyond 64 bits) falls back to the standard library.

    orjson writes non-ASCII text as is; the three characters of it that some readers
    take for a line break are escaped, so that a caller cannot break a line.
    """
    try:
        text = orjson.dumps(
            event, default=kwargs.get("default"), option=orjson.OPT_NON_STR_KEYS
        ).decode()
    except TypeError:
        return std_json.dumps(event, **kwargs)
    if text.isascii():
        return text
    return text.translate(_LINE_BREAKS)


def _console_tracebacks() -> structlog.typing.ExceptionRenderer:
    if importlib.util.find_spec("rich") is not None:
        return structlog.dev.RichTracebackFormatter(show_locals=False)
    return structlog.dev.plain_traceback
