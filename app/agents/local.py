"""Local agent runner: the agent as a subprocess on the workspace, same layout as a K8s Job.

The outcome is decided from the exit code and a validated `.jervis/result.json`, never from the
agent's word alone: an exit 0 without a valid result is a failure, and in a git workspace the
changed files are what git sees, not what the agent claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections import deque
from pathlib import Path

from app.agents import scripted_agent
from app.agents.base import AgentJob, AgentResult, LogSink
from app.agents.git import GitWorkspace
from app.agents.workspace import AGENT_FILES, ResultFileError, WorkspaceManager

log = logging.getLogger(__name__)

TAIL_LINES = 60


class LocalRunner:
    def __init__(
        self,
        workspaces: WorkspaceManager,
        *,
        command: list[str] | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self._workspaces = workspaces
        self._command = command or [sys.executable, str(Path(scripted_agent.__file__))]
        self._extra_env = extra_env or {}

    def _env(self, job: AgentJob) -> dict[str, str]:
        env = {**os.environ, **self._extra_env}
        env.update(
            TASK_ID=job.task_id,
            CLIENT_ID=job.client_id,
            PROJECT_ID=job.project_id or "",
            WORKSPACE_PATH=str(job.workspace),
            AGENT_TYPE=job.agent_type,
            ALLOW_GIT="true" if job.allow_git else "false",
        )
        return env

    async def run(self, job: AgentJob, *, on_log: LogSink | None = None) -> AgentResult:
        git = GitWorkspace(job.workspace)
        in_git = await git.is_repo()
        before = await git.snapshot() if in_git else {}
        proc = await asyncio.create_subprocess_exec(
            *self._command,
            cwd=job.workspace,
            env=self._env(job),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so cancel kills its children too
        )
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        reader = asyncio.create_task(self._pump(proc, tail, on_log))
        try:
            await asyncio.wait_for(proc.wait(), job.timeout_seconds)
        except TimeoutError:
            await _kill(proc)
            await reader
            return AgentResult(
                success=False,
                summary=f"Agent {job.agent_type} timed out after {job.timeout_seconds:g} s",
                exit_code=proc.returncode,
                log_tail="\n".join(tail),
            )
        except BaseException:  # cancelled: the run was cancelled, take the agent down with it
            await _kill(proc)
            reader.cancel()
            raise
        await reader
        return await self._outcome(job, proc.returncode or 0, "\n".join(tail), git if in_git else None, before)

    async def _outcome(
        self, job: AgentJob, exit_code: int, log_tail: str, git: GitWorkspace | None, before: dict[str, str]
    ) -> AgentResult:
        try:
            result = self._workspaces.read_result(job.workspace)
        except ResultFileError as exc:
            return AgentResult(success=False, summary=str(exc), exit_code=exit_code, log_tail=log_tail)
        changed = result.changed_files
        if git is not None:
            changed = [p for p in await git.changed_since(before) if not _is_agent_file(p)]
        success = result.success and exit_code == 0
        summary = result.summary
        if result.success and exit_code != 0:
            summary = f"{summary} (but the agent exited with code {exit_code})"
        return AgentResult(
            success=success, summary=summary, changed_files=changed, exit_code=exit_code, log_tail=log_tail
        )

    @staticmethod
    async def _pump(proc: asyncio.subprocess.Process, tail: deque[str], on_log: LogSink | None) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            tail.append(line)
            if on_log is not None:
                on_log(line)


def _is_agent_file(path: str) -> bool:
    first = path.split("/", 1)[0]
    return first in AGENT_FILES


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), 5)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
