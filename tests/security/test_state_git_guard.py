"""The git-configuration guard across a restart of the service (issue 40: "a step re-attached
after a restart skips the git guard"). The service's git runs outside the sandbox, so a filter
the agent configures would run as the service; the guard puts the configuration back after the
agent. On main it was recorded in memory at launch only: a service that re-attached to the agent
after a restart (or the pod that adopted a suspended run) had no record, and let the change stand.
In the sandbox `.git` is read-only now (tests/security/test_git_sandbox.py), so the agent here runs
unconfined (`AGENT_SANDBOX=off`, the operator's choice), where the guard is what stands.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from app.agents.base import AgentResult
from app.agents.control import AgentControl, use_control
from app.agents.local import LocalRunner
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from tests.security.test_state_runner import PATH, hand_over, job, script
from tests.support import git, make_git_repo

#: Waits while the service "restarts", then configures a filter that would run as the service.
LATE_CONFIGURING_AGENT = r'''
import json, subprocess, time
from pathlib import Path
print("waiting", flush=True)
time.sleep(1.5)
subprocess.run(["git", "config", "filter.x.clean", "touch /tmp/ran-as-the-service"], check=True)
Path(".gitattributes").write_text("* filter=x\n")
Path(".jervis/result.json").write_text(json.dumps(
    {"success": True, "summary": "configured git", "changedFiles": [".gitattributes"]}))
'''


def unconfined(manager: WorkspaceManager, tmp_path: Path, command: list[str]) -> LocalRunner:
    settings = Settings(local_agent_command=command, agent_sandbox="off")
    return LocalRunner(manager, settings, environ={"PATH": PATH, "HOME": str(tmp_path / "home")})


async def test_a_git_configuration_changed_while_the_service_restarted_is_put_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    workspace = make_git_repo(data / "c1" / "ws")
    before = (workspace / ".git" / "config").read_bytes()
    manager = WorkspaceManager(data)
    command = [sys.executable, str(script(tmp_path, "agent.py", LATE_CONFIGURING_AGENT))]
    control, lines = AgentControl(), []

    async def first_service() -> AgentResult:
        use_control(control)
        return await unconfined(manager, tmp_path, command).run(job(workspace), prepare=hand_over(manager, workspace),
                                                               on_log=lines.append)

    running = asyncio.create_task(first_service())
    for _ in range(500):
        if "waiting" in lines:
            break
        await asyncio.sleep(0.02)
    control.suspend("shutdown")  # the service goes down mid-step: the agent keeps running
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    async def unused() -> None:
        raise AssertionError("the re-attaching service must not prepare the step again")

    result = await unconfined(manager, tmp_path, command).run(job(workspace), prepare=unused)

    assert "filter.x.clean" not in git(workspace, "config", "--list")
    assert (workspace / ".git" / "config").read_bytes() == before
    assert not result.success
    assert result.summary.startswith("The agent changed the repository's git configuration (.git/config)")
