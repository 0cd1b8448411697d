"""Every MongoDB command a process sends, recorded through pymongo's command monitoring.

A process records into a file when `JERVIS_BENCH_COMMANDS` names one and this module's
`install_from_environment` runs at its start: `SITECUSTOMIZE` is the text of a `sitecustomize.py`
that does it, so a service started with that file's folder on `PYTHONPATH` is measured without a
line of it changed (Python imports `sitecustomize` at start-up). One tab-separated line per
command: wall-clock start, duration in ms, command name, collection, documents, ok.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pymongo import monitoring

ENV = "JERVIS_BENCH_COMMANDS"
SITECUSTOMIZE = "import bench.command_log\nbench.command_log.install_from_environment()\n"


@dataclass(frozen=True)
class Command:
    started: float
    """wall clock (s) when the command was sent"""
    ms: float
    """duration as the client saw it: waiting for the server included"""
    name: str
    collection: str
    documents: int
    """documents written by an insert / update / delete (bulk writes carry several); 0 for reads"""
    ok: bool


class CommandLog(monitoring.CommandListener):
    """Appends each finished command to `path` (pymongo calls listeners from any thread)."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO = path.open("a", buffering=1)
        self._lock = threading.Lock()
        self._open: dict[tuple[int, object], tuple[float, str, str, int]] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        command = event.command
        target = command.get(event.command_name)
        documents = len(command.get("updates") or command.get("documents") or command.get("deletes") or [])
        with self._lock:
            self._open[(event.request_id, event.connection_id)] = (
                time.time(), event.command_name, target if isinstance(target, str) else "", documents)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self._finish(event, ok=True)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self._finish(event, ok=False)

    def _finish(self, event: monitoring.CommandSucceededEvent | monitoring.CommandFailedEvent, *, ok: bool) -> None:
        with self._lock:
            begun = self._open.pop((event.request_id, event.connection_id), None)
            if begun is not None:
                started, name, collection, documents = begun
                self._file.write(f"{started:.6f}\t{event.duration_micros / 1000:.3f}\t{name}\t{collection}\t"
                                 f"{documents}\t{int(ok)}\n")


def install_from_environment() -> None:
    """Record this process's commands into the file `JERVIS_BENCH_COMMANDS` names, if it names one."""
    path = os.environ.get(ENV)
    if path:
        monitoring.register(CommandLog(Path(path)))


def read(path: Path) -> list[Command]:
    commands = []
    if path.exists():
        for line in path.read_text().splitlines():
            started, ms, name, collection, documents, ok = line.split("\t")
            commands.append(Command(float(started), float(ms), name, collection, int(documents), ok == "1"))
    return commands
