"""Wiring done once per process: logging now, the app's objects later."""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer


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
            structlog.processors.JSONRenderer(),
        ]
    else:
        processors.append(structlog.dev.ConsoleRenderer(exception_formatter=_console_tracebacks()))
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=file or sys.stderr),
        cache_logger_on_first_use=cache,
    )


def _console_tracebacks() -> structlog.typing.ExceptionRenderer:
    if importlib.util.find_spec("rich") is not None:
        return structlog.dev.RichTracebackFormatter(show_locals=False)
    return structlog.dev.plain_traceback
