"""LoopbackServer with real child processes: Python's own `http.server`, or a few lines of Python
that never listen, exit at once, or ignore SIGTERM."""

from __future__ import annotations

import signal
import socket
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.dev.loopback_server import LoopbackServer, LoopbackServerError, Readiness
from tests.support import free_port, pid_alive

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
#: `python -m http.server` on the port, optionally with SIGTERM ignored first.
_HTTP_SERVER = (
    "import runpy, signal, sys\n"
    "if sys.argv[2] == 'ignore-term':\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "sys.argv = ['http.server', '--bind', '127.0.0.1', sys.argv[1]]\n"
    "runpy.run_module('http.server', run_name='__main__', alter_sys=True)\n"
)


def http_server(term: str = "default") -> Callable[[int], list[str]]:
    return lambda port: [sys.executable, "-u", "-c", _HTTP_SERVER, str(port), term]


def answers_http(port: int, _pid: int) -> Readiness:
    try:
        with _NO_PROXY.open(f"http://127.0.0.1:{port}/", timeout=0.5) as response:
            return Readiness.READY if response.status == 200 else Readiness.NOT_YET
    except OSError:
        return Readiness.NOT_YET



@pytest.fixture
def server(tmp_path: Path) -> Iterator[LoopbackServer]:
    server = LoopbackServer("test server", tmp_path / "server.log", stop_seconds=5.0)
    try:
        yield server
    finally:
        server.stop()


def test_start_returns_once_the_child_answers_and_stop_terminates_it(server: LoopbackServer, tmp_path: Path) -> None:
    port = server.start(http_server(), answers_http, timeout=30, cwd=tmp_path)
    pid = server.pid
    assert pid is not None and pid_alive(pid) and server.port == port and server.running()
    with _NO_PROXY.open(f"http://127.0.0.1:{port}/", timeout=5) as response:
        assert response.status == 200
    assert server.start(http_server(), answers_http, timeout=30, cwd=tmp_path) == port  # already running
    assert server.pid == pid

    assert server.stop() == -signal.SIGTERM
    assert not pid_alive(pid) and server.port is None and server.pid is None
    assert "Serving HTTP on 127.0.0.1" in server.log_file.read_text()
    assert server.stop() is None  # nothing left to stop


def test_ready_deadline_fires_when_the_child_never_listens(server: LoopbackServer, tmp_path: Path) -> None:
    never_listens = [sys.executable, "-u", "-c", "import os, time; print('pid', os.getpid()); time.sleep(120)"]
    started = time.monotonic()
    with pytest.raises(LoopbackServerError, match=r"(?s)test server did not become ready within 1\.0s.*pid \d+"):
        server.start(lambda _port: never_listens, answers_http, timeout=1.0, cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 30  # waited for the deadline, then gave up instead of the child's 120 s
    child_pid = int(server.log_file.read_text().split()[1])
    assert not pid_alive(child_pid) and server.pid is None  # the child was stopped, not left behind


def test_child_exiting_during_start_up_is_reported_with_its_log_tail(server: LoopbackServer, tmp_path: Path) -> None:
    exits = [sys.executable, "-c", "import sys; print('fatal: no such database', file=sys.stderr); sys.exit(3)"]
    started = time.monotonic()
    with pytest.raises(LoopbackServerError,
                       match=r"(?s)exited during start-up \(exit code 3\).*server\.log.*fatal: no such database"):
        server.start(lambda _port: exits, answers_http, timeout=60, cwd=tmp_path)
    assert time.monotonic() - started < 60  # noticed the exit, did not wait out the deadline


def test_stop_kills_a_child_that_ignores_sigterm_after_its_deadline(tmp_path: Path) -> None:
    server = LoopbackServer("stubborn", tmp_path / "server.log", stop_seconds=0.5)
    try:
        server.start(http_server("ignore-term"), answers_http, timeout=30, cwd=tmp_path)
        pid = server.pid
        assert pid is not None
        started = time.monotonic()
        assert server.stop() == -signal.SIGKILL  # SIGTERM was ignored: only SIGKILL ended it
        assert 0.5 <= time.monotonic() - started < 10
        assert not pid_alive(pid)
    finally:
        server.stop()


def test_a_port_taken_by_someone_else_is_retried_on_another(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = iter([taken, free_port()])
        server = LoopbackServer("test server", tmp_path / "server.log", pick_port=lambda: next(ports))
        try:
            port = server.start(http_server(), answers_http, timeout=30, cwd=tmp_path)
            assert port != taken and answers_http(port, 0) is Readiness.READY
        finally:
            server.stop()


def test_a_program_that_cannot_be_executed_raises_the_given_error(tmp_path: Path) -> None:
    class LauncherError(RuntimeError):
        pass

    server = LoopbackServer("missing", tmp_path / "server.log", error=LauncherError)
    with pytest.raises(LauncherError, match=r"cannot execute .*no-such-program"):
        server.start(lambda _port: [str(tmp_path / "no-such-program")], answers_http, timeout=5, cwd=tmp_path)
    assert server.pid is None and server.stop() is None
