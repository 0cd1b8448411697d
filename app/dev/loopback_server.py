"""A helper server as a child process on a free loopback port (the embedded MongoDB and model).

Both launchers need the same things, written once here: a free 127.0.0.1 port (picked by binding
port 0, which is racy, so a clash is retried on another port), the child's output in a log file
read back for error messages, a wait for readiness with a deadline that also notices a child that
exited, a stop with a deadline (SIGTERM, then SIGKILL), and a child that dies with its parent even
when the parent is SIGKILLed (PR_SET_PDEATHSIG, Linux; it fires when the *thread* that started the
child ends, so start servers from a thread that outlives them).
"""

from __future__ import annotations

import enum
import logging
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from app.runtime.child_process import die_with_parent

logger = logging.getLogger(__name__)

LOG_TAIL_CHARS = 4000
_KILL_WAIT_SECONDS = 5.0
_CONNECT_SECONDS = 0.25


class LoopbackServerError(RuntimeError):
    """The server could not be executed, exited during start-up or was not ready in time."""


class Readiness(enum.Enum):
    """What a readiness probe saw on the port."""

    READY = "ready"
    NOT_YET = "not yet"
    FOREIGN = "foreign"  # another server answers: it bound the port before our child did


#: `probe(port, pid)`: asked once the port accepts connections, until it says READY or FOREIGN.
#: It must return within a short timeout of its own (it runs inside the start deadline).
Probe = Callable[[int, int], Readiness]


def free_port() -> int:
    """A free loopback port, as the kernel hands it out (racy by nature: start() retries)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=_CONNECT_SECONDS):
            return True
    except OSError:
        return False


class LoopbackServer:
    """One child server on 127.0.0.1, its output in `log_file`.

    `extra_logs` are further files the server writes (read for error messages too); `error` is the
    exception type raised, so each launcher keeps its own; `stop_seconds` is how long SIGTERM gets
    before SIGKILL.
    """

    def __init__(
        self,
        name: str,
        log_file: Path,
        *,
        ready_what: str = "become ready",
        extra_logs: Sequence[Path] = (),
        stop_seconds: float = 5.0,
        pick_port: Callable[[], int] | None = None,
        port_attempts: int = 5,
        poll_seconds: float = 0.05,
        error: type[Exception] = LoopbackServerError,
    ) -> None:
        self.name = name
        self.log_file = Path(log_file)
        self._ready_what = ready_what
        self._extra_logs = [Path(path) for path in extra_logs]
        self._stop_seconds = stop_seconds
        self._pick_port = pick_port or free_port
        self._port_attempts = port_attempts
        self._poll = poll_seconds
        self._error = error
        self._process: subprocess.Popen[bytes] | None = None
        self._output: IO[bytes] | None = None
        self._port: int | None = None

    @property
    def port(self) -> int | None:
        """The port of a started server, None before start() and after stop()."""
        return self._port

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(
        self,
        command: Callable[[int], Sequence[str]],
        probe: Probe,
        *,
        timeout: float,
        cwd: Path,
        env: Mapping[str, str] | None = None,
    ) -> int:
        """Run `command(port)` on a free port and return the port once `probe` says READY.

        One deadline (`timeout` seconds) covers every attempt. The child exiting with "address
        already in use" in its output, or a FOREIGN answer, is a lost port race: retried on a new
        port. Any other exit, or the deadline, stops the child and raises with the log's tail.
        """
        if self.running():
            assert self._port is not None
            return self._port
        self.stop()  # reap a server that died on its own since the last start
        deadline = time.monotonic() + timeout
        for _ in range(self._port_attempts):
            port = self._pick_port()
            self._spawn(command(port), cwd=cwd, env=env)
            outcome = self._wait_ready(port, probe, deadline)
            if outcome is Readiness.READY:
                self._port = port
                logger.info("%s pid %s listening on 127.0.0.1:%d", self.name, self.pid, port)
                return port
            exit_code = self.stop()
            if outcome is Readiness.NOT_YET:
                raise self._error(f"{self.name} did not {self._ready_what} within {timeout:.1f}s\n{self.log_tail()}")
            if outcome is None and not self._port_clash():
                raise self._error(f"{self.name} exited during start-up (exit code {exit_code})\n{self.log_tail()}")
            logger.warning("%s: port %d was taken; retrying on another port", self.name, port)
        raise self._error(
            f"{self.name} could not bind a free port after {self._port_attempts} attempts\n{self.log_tail()}"
        )

    def _spawn(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._output = self.log_file.open("wb")
        try:
            self._process = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
                stdout=self._output, stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
            )
        except OSError as exc:
            self._close_output()
            raise self._error(f"cannot execute {argv[0]}: {exc}") from exc

    def _wait_ready(self, port: int, probe: Probe, deadline: float) -> Readiness | None:
        """READY or FOREIGN as the probe said, None when the child exited, NOT_YET at the deadline."""
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return None
            if _accepts(port):
                seen = probe(port, self._process.pid)
                if seen is not Readiness.NOT_YET:
                    return seen
            time.sleep(self._poll)
        return Readiness.NOT_YET

    def _port_clash(self) -> bool:
        return "address already in use" in self.log_tail().lower()

    def log_tail(self) -> str:
        """The last characters of the child's output and of its own log files, for error messages."""
        parts = []
        for path in (self.log_file, *self._extra_logs):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                parts.append(f"--- {path} ---\n{text[-LOG_TAIL_CHARS:]}")
        return "\n".join(parts) or "(no server output)"

    def stop(self) -> int | None:
        """SIGTERM, SIGKILL after `stop_seconds`; return the exit status (None: nothing to stop,
        or the child outlived SIGKILL too, which is logged). Safe to call any number of times."""
        process, self._process, self._port = self._process, None, None
        code = None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=self._stop_seconds)
                except subprocess.TimeoutExpired:
                    logger.warning("%s pid %d ignored SIGTERM for %.1fs; killing it",
                                   self.name, process.pid, self._stop_seconds)
                    process.kill()
                    try:
                        process.wait(timeout=_KILL_WAIT_SECONDS)
                    except subprocess.TimeoutExpired:
                        logger.error("%s pid %d still runs %.1fs after SIGKILL",
                                     self.name, process.pid, _KILL_WAIT_SECONDS)
            code = process.returncode
        self._close_output()
        return code

    def _close_output(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None


class LaunchedServer:
    """What a launcher that owns a `LoopbackServer` (as `_server`) shares: its log tail, stop,
    and use as a context manager (`with EmbeddedMongo(...) as mongo:` starts and stops it)."""

    _server: LoopbackServer

    def start(self) -> str:
        raise NotImplementedError

    def log_tail(self) -> str:
        """Last lines of the server's output and log, for error messages."""
        return self._server.log_tail()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period. Safe to call any number of times."""
        self._server.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
