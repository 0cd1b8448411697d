"""nx-27017 (MongoDB wire protocol on SQLite) as a child process.

Used by the dev launcher (the service on embedded defaults, no MongoDB to install) and by the
tests (a real wire-protocol server, real pymongo). Production points at a real MongoDB instead.
"""

from __future__ import annotations

import logging
import shutil
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from app.runtime.child_process import ChildProcess

logger = logging.getLogger(__name__)

EXECUTABLE_NAME = "nx-27017"
_PORT_ATTEMPTS = 5
_STOP_GRACE_SECONDS = 5.0
_LOG_TAIL_CHARS = 4000


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


def _free_port() -> int:
    """Ask the kernel for a free loopback port (racy by nature: start() retries on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedMongo:
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
        self._pick_port = pick_port or _free_port
        self.data_dir = data_dir
        self.work_dir = Path(work_dir)
        self.executable = Path(executable) if executable is not None else None
        self.log_file = self.work_dir / "nx-27017.log"
        self.pid_file = self.work_dir / "nx-27017.pid"
        self.output_file = self.work_dir / "nx-27017.out"
        self._child = ChildProcess(self.output_file, grace_seconds=_STOP_GRACE_SECONDS)
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            raise EmbeddedMongoError("EmbeddedMongo is not started")
        return self._url

    @property
    def pid(self) -> int | None:
        return self._child.pid

    def start(self, timeout: float = 20.0) -> str:
        """Spawn the server and block until a ping answers; return the URL.

        A port picked by binding port 0 can be taken by someone else before nx-27017 binds it,
        so a clash (our process died, or the ping reached a different server) is retried on a
        new port.
        """
        if self._child.running():
            return self.url
        self.stop()  # reap a server that died on its own since the last start
        executable = self.executable or find_executable()
        if not executable.is_file():
            raise EmbeddedMongoError(f"{EXECUTABLE_NAME} executable not found: {executable}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if self.data_dir is not None:
            Path(self.data_dir).mkdir(parents=True, exist_ok=True)

        deadline = time.monotonic() + timeout
        for _ in range(_PORT_ATTEMPTS):
            port = self._pick_port()
            self._spawn(executable, port)
            outcome = self._wait_ready(port, deadline)
            if outcome == "ready":
                self._url = f"mongodb://127.0.0.1:{port}"
                logger.info("nx-27017 pid %s listening on %s", self.pid, self._url)
                return self._url
            self.stop()
            if outcome == "timeout":
                raise EmbeddedMongoError(
                    f"nx-27017 did not answer a ping within {timeout:.1f}s\n{self.log_tail()}"
                )
            if outcome == "died" and not self._port_clash():
                raise EmbeddedMongoError(f"nx-27017 exited during start-up\n{self.log_tail()}")
            logger.warning("nx-27017 port %d was taken; retrying on another port", port)
        raise EmbeddedMongoError(
            f"nx-27017 could not bind a free port after {_PORT_ATTEMPTS} attempts\n{self.log_tail()}"
        )

    def _spawn(self, executable: Path, port: int) -> None:
        data_dir = str(self.data_dir) if self.data_dir is not None else "memory"
        argv = [str(executable), "--data-dir", data_dir, "--host", "127.0.0.1", "-p", str(port),
                "--log-file", str(self.log_file), "--pid-file", str(self.pid_file)]
        try:  # cwd: any stray default files land there, not in the caller's cwd
            self._child.spawn(argv, cwd=self.work_dir)
        except OSError as exc:
            raise EmbeddedMongoError(f"cannot execute {executable}: {exc}") from exc

    def _wait_ready(self, port: int, deadline: float) -> str:
        """Return "ready", "died", "foreign" (someone else's server on the port) or "timeout"."""
        assert self._child.process is not None
        client: MongoClient[dict[str, object]] = MongoClient(
            f"mongodb://127.0.0.1:{port}",
            serverSelectionTimeoutMS=250,
            connectTimeoutMS=250,
            directConnection=True,
        )
        try:
            while time.monotonic() < deadline:
                if self._child.process.poll() is not None:
                    return "died"
                try:
                    status = client.admin.command("serverStatus")
                except PyMongoError:
                    time.sleep(0.05)
                    continue
                # The pid check tells our server apart from another one that won the port race.
                return "ready" if status.get("pid") in (None, self._child.process.pid) else "foreign"
            return "timeout"
        finally:
            client.close()

    def _port_clash(self) -> bool:
        return "address already in use" in self.log_tail().lower()

    def log_tail(self) -> str:
        """Last lines of the server log and of its stdout/stderr, for error messages."""
        parts = []
        for path in (self.output_file, self.log_file):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                parts.append(f"--- {path.name} ---\n{text[-_LOG_TAIL_CHARS:]}")
        return "\n".join(parts) or "(no server output)"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period. Safe to call any number of times."""
        self._url = None
        self._child.stop()

    def __enter__(self) -> EmbeddedMongo:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
