"""Issue 40: a test run (the project's tests: model-written code) reaches no network, still gets
the pytest its Python lacks (installed by the service beforehand, app/agents/test_tools.py), and
cannot fill the machine's memory through the sandbox's tmpfs (AGENT_SANDBOX_TMPFS_MB)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.agents.base import AgentJob, AgentResult
from app.agents.local import LocalRunner
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from tests.support import make_git_repo

PATH = os.environ["PATH"]
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin")

#: A model-written test that tries to leave the sandbox: the loopback port named in its file, and a
#: big write into /tmp. It passes only when both are refused.
HOSTILE_TEST = '''
import errno, socket
from pathlib import Path

def test_no_network_and_a_bounded_tmp():
    port = int(Path("port.txt").read_text())
    with socket.socket() as sock:
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
            reached = "reached"
        except OSError as exc:
            reached = type(exc).__name__
    try:
        with open("/tmp/filler", "wb") as out:
            for _ in range(64):
                out.write(b"x" * (1024 * 1024))
        filled = "wrote 64 MiB"
    except OSError as exc:
        filled = errno.errorcode.get(exc.errno, str(exc.errno))
    Path("outcome.json").write_text(f'{{"network": "{reached}", "tmp": "{filled}"}}')
    assert reached == "ConnectionRefusedError" and filled == "ENOSPC"
'''


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def _python_without_pytest() -> str:
    if SYSTEM_PYTHON is None:
        pytest.skip("no system python3 here")
    done = subprocess.run([SYSTEM_PYTHON, "-c", "import pytest"], capture_output=True, check=False)
    if done.returncode == 0:
        pytest.skip("the system python3 has pytest: nothing to provide")
    return SYSTEM_PYTHON


async def _test_run(tmp_path: Path, port: int, python: str) -> tuple[AgentResult, Path]:
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    (workspace / "test_hostile.py").write_text(HOSTILE_TEST)
    (workspace / "port.txt").write_text(str(port))
    (workspace / ".jervis").mkdir(exist_ok=True)
    (workspace / ".jervis" / "test.json").write_text(json.dumps({"command": [python, "-m", "pytest", "-q",
                                                                             "-p", "no:cacheprovider"],
                                                                 "timeout_seconds": 120}))
    manager = WorkspaceManager(data)
    settings = Settings(agent_sandbox="bwrap", agent_sandbox_tmpfs_mb=16)

    async def prepare() -> None:
        return None

    job = AgentJob(thread_id="thread-tests-abcd", task_id="t1", client_id="c1", agent_type="aider",
                   workspace=workspace, mode="test", timeout_seconds=180)
    result = await LocalRunner(manager, settings, environ={"PATH": PATH, "HOME": str(tmp_path)}).run(
        job, prepare=prepare)
    return result, workspace


async def test_a_test_run_gets_pytest_from_the_service_but_no_network_and_a_bounded_tmp(
        tmp_path: Path, listening_port: int) -> None:
    python = _python_without_pytest()
    result, workspace = await _test_run(tmp_path, listening_port, python)

    outcome = json.loads((workspace / "outcome.json").read_text())
    assert outcome == {"network": "ConnectionRefusedError", "tmp": "ENOSPC"}
    assert result.test_outcome == "passed", result.log_tail
    installed = list((tmp_path / "data" / ".orchestrator" / "agent-tools").glob("*/pytest-py*/.jervis-installed"))
    assert len(installed) == 1 and installed[0].read_text().strip() == "pytest"
