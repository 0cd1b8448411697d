"""Structured logs: one JSON object per line, the run's `thread_id` / `task_id` on every line,
configured secrets never written.

The run identity travels in context variables: `run_context()` is entered by the task that drives
a run, and every task it spawns inherits it, so nodes, LLM calls and agent runners need not pass
ids to their loggers. Redaction applies to what is written (the formatted message with its
arguments, and the traceback), for the secrets the service was configured with and for token shapes it was not told of
(an agent's `GIT_TOKEN` echoed in its log, a provider error quoting a key): `Redactor`, the same
one every other outgoing text passes (app/observability/redaction.py).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import IO, Literal

from app.observability.redaction import REDACTED, Redactor
from app.schemas.thread_ids import task_id_of

_thread_id: ContextVar[str | None] = ContextVar("log_thread_id", default=None)
_task_id: ContextVar[str | None] = ContextVar("log_task_id", default=None)

__all__ = ["REDACTED", "Redactor", "build_handler", "configure_logging", "current_run", "run_context"]


@contextmanager
def run_context(*, thread_id: str | None, task_id: str | None) -> Iterator[None]:
    """Tag every log line written inside (and in tasks started inside) with the run's ids."""
    thread_token, task_token = _thread_id.set(thread_id), _task_id.set(task_id)
    try:
        yield
    finally:
        _thread_id.reset(thread_token)
        _task_id.reset(task_token)


def current_run() -> tuple[str | None, str | None]:
    """(thread_id, task_id) of the run this code executes for, to carry into work done later."""
    return _thread_id.get(), _task_id.get()


#: The run named in a request path (uvicorn logs requests outside any run's context).
_RUN_PATH = re.compile(r"/(?:approve|cancel|status|stream)/(thread-[^/?\s]+)")


class _RunContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        thread_id, task_id = _thread_id.get(), _task_id.get()
        if thread_id is None and record.name == "uvicorn.access" and isinstance(record.args, tuple):
            match = _RUN_PATH.search(" ".join(map(str, record.args)))
            if match:
                thread_id = match.group(1)
                task_id = task_id_of(thread_id)
        record.thread_id, record.task_id = thread_id, task_id
        return True


#: Paths clients poll (Kotlin and every console page read /status about once a second; probes and
#: Prometheus read the others): an answered read of one is not worth a log line each.
_POLLED = ("/status/", "/health", "/metrics", "/runs")


class QuietPolls(logging.Filter):
    """Drops uvicorn's access line of a polled read that was answered (2xx/3xx); other requests and
    every failed poll are logged. First among the access logger's filters, so a dropped line costs
    no later filter's work (litellm's access-log redaction scans each line: a tenth of a /status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not isinstance(args, tuple) or len(args) != 5 or args[1] not in ("GET", "HEAD"):
            return True
        path, status = str(args[2]), args[4]
        return not (path.startswith(_POLLED) and isinstance(status, int) and status < 400)


class JsonFormatter(logging.Formatter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": self._redact(record.getMessage()),
            "thread_id": getattr(record, "thread_id", None),
            "task_id": getattr(record, "task_id", None),
        }
        exception = self.formatException(record.exc_info) if record.exc_info else record.exc_text
        if exception:
            entry["exception"] = self._redact(exception)
        if record.stack_info:
            entry["stack"] = self._redact(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For a developer's terminal (`LOG_FORMAT=text`): the same fields on one readable line."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(thread_id)s %(task_id)s] %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(super().format(record))


def build_handler(*, fmt: Literal["json", "text"] = "json", secrets: Iterable[str] = (),
                  stream: IO[str] | None = None) -> logging.Handler:
    redact = Redactor(secrets)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(_RunContextFilter())
    handler.setFormatter(JsonFormatter(redact) if fmt == "json" else TextFormatter(redact))
    return handler


def configure_logging(*, level: str = "INFO", fmt: Literal["json", "text"] = "json",
                      secrets: Iterable[str] = ()) -> None:
    """Route every logger (uvicorn's and litellm's included) to one stderr handler."""
    handler = build_handler(fmt=fmt, secrets=secrets)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)  # Python warnings become log lines too
    # uvicorn and litellm attach their own stream handlers (uvicorn before importing the app):
    # hand their records to ours, so every line has one format and passes the redactor.
    for logger in list(logging.root.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            for existing in [h for h in logger.handlers if type(h) is not logging.NullHandler]:
                logger.removeHandler(existing)
            if logger.name.startswith("uvicorn"):
                logger.propagate = True
    access = logging.getLogger("uvicorn.access")
    access.filters = [QuietPolls(), *[f for f in access.filters if not isinstance(f, QuietPolls)]]
    for noisy in ("httpx", "kubernetes.client.rest"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
