"""nx-27017 (MongoDB wire protocol on SQLite) as a child process.

Used by the dev launcher (the service on embedded defaults, no MongoDB to install) and by the
tests (a real wire-protocol server, real pymongo). Production points at a real MongoDB instead.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from app.dev.loopback_server import LaunchedServer, LoopbackServer, Readiness

EXECUTABLE_NAME = "nx-27017"
_STOP_GRACE_SECONDS = 5.0


class EmbeddedMongoError(RuntimeError):
    """The embedded server could not be found, started or reached."""


def find_executable() -> Path:
    """Locate nx-27017: next to the running interpreter (venv bin) first, then on PATH."""
    beside = Path(sys.executable).parent / EXECUTABLE_NAME
    if beside.is_file():
        return beside
    found = shutil.which(EXECUTABLE_NAME)
    if found:
        return Path(found)
    raise EmbeddedMongoError(
        f"{EXECUTABLE_NAME} not found next to {sys.executable} nor on PATH; "
        "install it with `pip install nx-27017` or configure a real MongoDB URL"
    )


def _answers_ping(port: int, pid: int) -> Readiness:
    """READY when serverStatus answers from our child; its pid tells it apart from a server of
    someone else who won the race for the port."""
    client: MongoClient[dict[str, object]] = MongoClient(
        f"mongodb://127.0.0.1:{port}", serverSelectionTimeoutMS=250, connectTimeoutMS=250, directConnection=True,
    )
    try:
        status = client.admin.command("serverStatus")
    except PyMongoError:
        return Readiness.NOT_YET
    finally:
        client.close()
    return Readiness.READY if status.get("pid") in (None, pid) else Readiness.FOREIGN


class EmbeddedMongo(LaunchedServer):
    """One nx-27017 process on a free 127.0.0.1 port.

    ``data_dir=None`` runs with in-memory databases; a directory persists them across restarts.
    ``work_dir`` receives the log, pid and stdout files: nx-27017 otherwise shares one default
    log/pid file in /tmp between all instances.
    """

    def __init__(
        self,
        *,
        data_dir: Path | None = None,
        work_dir: Path,
        executable: Path | str | None = None,
        pick_port: Callable[[], int] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.work_dir = Path(work_dir)
        self.executable = Path(executable) if executable is not None else None
        self.log_file = self.work_dir / "nx-27017.log"
        self.pid_file = self.work_dir / "nx-27017.pid"
        self.output_file = self.work_dir / "nx-27017.out"
        self._server = LoopbackServer(
            EXECUTABLE_NAME, self.output_file, ready_what="answer a ping", extra_logs=[self.log_file],
            stop_seconds=_STOP_GRACE_SECONDS, pick_port=pick_port, error=EmbeddedMongoError,
        )

    @property
    def url(self) -> str:
        if self._server.port is None:
            raise EmbeddedMongoError("EmbeddedMongo is not started")
        return f"mongodb://127.0.0.1:{self._server.port}"

    @property
    def pid(self) -> int | None:
        return self._server.pid

    def start(self, timeout: float = 20.0) -> str:
        """Spawn the server and block until a ping answers; return the URL."""
        if self._server.running():
            return self.url
        executable = self.executable or find_executable()
        if not executable.is_file():
            raise EmbeddedMongoError(f"{EXECUTABLE_NAME} executable not found: {executable}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if self.data_dir is not None:
            Path(self.data_dir).mkdir(parents=True, exist_ok=True)
        data_dir = str(self.data_dir) if self.data_dir is not None else "memory"

        def command(port: int) -> list[str]:
            return [str(executable), "--data-dir", data_dir, "--host", "127.0.0.1", "-p", str(port),
                    "--log-file", str(self.log_file), "--pid-file", str(self.pid_file)]

        # cwd: any stray default files land there, not in the caller's cwd
        self._server.start(command, _answers_ping, timeout=timeout, cwd=self.work_dir)
        return self.url

