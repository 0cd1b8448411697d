"""The cleanup after a step against a hostile agent (issue 40, item 1): it never deletes or
reads through what the agent planted in `.jervis/`, and it fails loudly when it cannot clean, so
that no step goes on over files the agent left where the service's belong. The agent runs
sandboxed by real bubblewrap under the real LocalRunner; the cleanup is the service's own
(`WorkspaceManager.cleanup`, which execute_step and the test runs call after every attempt).

On main the cleanup removed `.jervis/` with errors ignored, said nothing when that failed, and read
`.jervis/manifest.json` by following whatever stood there (a FIFO blocked it for good).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from pathlib import Path

import pytest

from app.agents.workspace import WorkspaceManager
from tests.security.test_state_runner import SECRET, hand_over, immutable, job, sandboxed, script
from tests.support import make_git_repo

#: Leaves its mark in `.jervis/` and makes it read-only (what stops a service that is not root).
LOCKING_AGENT = r'''
import json, os
from pathlib import Path
Path(".jervis/planted.json").write_text(json.dumps({"next": "step"}))
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": "done"}))
os.system("chmod -R a-w .jervis")
'''

#: Puts a FIFO where the service reads the list of files it created for the step.
FIFO_AGENT = r'''
import json, os
from pathlib import Path
os.unlink(".jervis/manifest.json")
os.mkfifo(".jervis/manifest.json")
Path(".jervis/result.json").write_text(json.dumps({"success": True, "summary": "done"}))
'''


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    make_git_repo(root / "c1" / "ws")
    (root / "c2").mkdir()
    (root / "c2" / "credentials.txt").write_text(SECRET + "\n")
    return root


async def test_a_cleanup_that_cannot_clean_says_so(tmp_path: Path, data: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(script(tmp_path, "agent.py", LOCKING_AGENT))])
    await runner.run(job(workspace), prepare=hand_over(manager, workspace))
    planted = workspace / ".jervis" / "planted.json"
    immutable(planted)  # root is not stopped by a read-only directory (see test_state_runner.immutable)
    try:
        with caplog.at_level(logging.ERROR, logger="app.agents.workspace"):
            left = manager.cleanup(workspace)
    finally:
        immutable(planted, on=False)

    assert left is not None, "the cleanup left the agent's files behind without a word"
    assert "could not be cleaned" in left and ".jervis/planted.json" in left
    assert any(record.levelno == logging.ERROR and "could not be cleaned" in record.getMessage()
               for record in caplog.records)


async def test_a_fifo_for_the_manifest_does_not_block_the_cleanup(tmp_path: Path, data: Path) -> None:
    workspace = data / "c1" / "ws"
    manager = WorkspaceManager(data)
    runner = sandboxed(manager, tmp_path, [sys.executable, str(script(tmp_path, "agent.py", FIFO_AGENT))])
    await runner.run(job(workspace), prepare=hand_over(manager, workspace))
    box: list[str | None] = []

    cleaning = threading.Thread(target=lambda: box.append(manager.cleanup(workspace)), daemon=True)
    cleaning.start()
    await asyncio.to_thread(cleaning.join, 10)
    if cleaning.is_alive():  # blocked opening the FIFO: a writer that opens and closes it lets it go
        os.close(os.open(workspace / ".jervis" / "manifest.json", os.O_WRONLY | os.O_NONBLOCK))
        await asyncio.to_thread(cleaning.join, 10)
        pytest.fail("the cleanup hung reading a FIFO the agent put in place of the manifest")

    assert box == [None] and not (workspace / ".jervis").exists()
    assert (data / "c2" / "credentials.txt").read_text() == SECRET + "\n"
