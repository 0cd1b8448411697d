"""What the agent hands back (`.jervis/result.json`) is untrusted input (issue 40, item 1): read
without following a link, a regular file only, at most 1 MiB, validated. The agent runs sandboxed
by real bubblewrap under the real LocalRunner, which judges the step from that file.

On main a FIFO there blocked the service for good (its reader waits for a writer that never
comes), and a result of any size was read whole and its summary taken; a link was already
refused. The agent kills the entrypoint (whose own result would replace its forgery) before it
ends, so the step fails in any case: what is tested is what the service reads.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import pytest

from app.agents.base import AgentResult
from app.agents.workspace import WorkspaceManager
from tests.security.test_state_runner import SECRET, hand_over, job, sandboxed, script
from tests.support import make_git_repo

#: Replaces the result with what argv[1] says: a FIFO, a huge file, a link to argv[2].
RESULT_FORGING_AGENT = r'''
import json, os, signal, sys
from pathlib import Path
kind, target = sys.argv[1], sys.argv[2]
result = Path(".jervis") / "result.json"
if os.path.lexists(result):
    result.unlink()
if kind == "fifo":
    os.mkfifo(result)
elif kind == "huge":
    result.write_text(json.dumps({"success": True, "summary": "x" * (3 * 1024 * 1024), "changedFiles": ["a.py"]}))
    Path("a.py").write_text("a = 1\n")
elif kind == "link":
    result.symlink_to(target)
elif kind == "dir-link":
    Path(".jervis-elsewhere").mkdir()
    os.rename(".jervis", ".jervis-moved")
    os.symlink(os.path.dirname(target), ".jervis")
# The entrypoint would read the agent's result and write its own over it: it is killed first
# (its whole group inside the sandbox), so what is there now is what the service judges.
os.killpg(0, signal.SIGKILL)
'''


def run_in_thread(coroutine_factory, seconds: float) -> tuple[AgentResult | None, threading.Thread]:  # type: ignore[no-untyped-def]
    """The runner in a thread of its own (with its own loop): a service blocked in a read shows as
    a thread still alive after `seconds`, instead of a test that never ends."""
    box: list[AgentResult] = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(coroutine_factory())), daemon=True)
    thread.start()
    thread.join(seconds)
    return (box[0] if box else None), thread


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    make_git_repo(root / "c1" / "ws")
    (root / "c2").mkdir()
    (root / "c2" / "result.json").write_text(f'{{"success": true, "summary": "{SECRET}"}}')
    return root


async def test_a_fifo_for_a_result_does_not_block_the_service(tmp_path: Path, data: Path) -> None:
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(script(tmp_path, "agent.py", RESULT_FORGING_AGENT)),
                                           "fifo", "-"])

    result, thread = await asyncio.to_thread(
        run_in_thread, lambda: runner.run(job(workspace), prepare=hand_over(manager, workspace)), 20)
    if thread.is_alive():  # blocked opening the FIFO: a writer that opens and closes it lets it go
        os.close(os.open(workspace / ".jervis" / "result.json", os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)

    assert result is not None, "the service hung reading a FIFO the agent put in place of its result"
    assert not result.success and "not a regular file" in result.summary


async def test_a_huge_result_is_refused_unread(tmp_path: Path, data: Path) -> None:
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(script(tmp_path, "agent.py", RESULT_FORGING_AGENT)),
                                           "huge", "-"])

    result = await runner.run(job(workspace), prepare=hand_over(manager, workspace))

    # On main the 3 MiB was read whole and its summary became the step's (into the run's state,
    # the pushes, the next prompt).
    assert len(result.summary) < 2000, "the result was read whole and its summary taken"
    assert not result.success and "more than the 1048576 allowed" in result.summary


@pytest.mark.parametrize("kind", ["link", "dir-link"])
async def test_a_result_behind_a_link_is_not_read(tmp_path: Path, data: Path, kind: str) -> None:
    """Already refused on main (a check of both names for links); kept as a regression test."""
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(script(tmp_path, "agent.py", RESULT_FORGING_AGENT)),
                                           kind, str(data / "c2" / "result.json")])

    result = await runner.run(job(workspace), prepare=hand_over(manager, workspace))

    assert not result.success and SECRET not in result.summary and "symlink" in result.summary
