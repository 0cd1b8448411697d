"""Local agent runner: the agent entrypoint as a subprocess on the workspace, as a Job would run it.

Development uses it without a cluster. The entrypoint (agent-images/entrypoint) is the same one
the agent images run, so changed files, results and git steps behave identically; which agent it
drives for each type is `LocalAgents`' choice (the local Aider by default). The subprocess gets
an allow-listed environment (`agent_env`), never the service's whole one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

from app.agents.agent_env import local_agent_env
from app.agents.base import AgentJob, AgentResult, LogSink, Prepare
from app.agents.job_spec import job_name
from app.agents.local_agents import AiderInstallError, LocalAgents
from app.agents.outcome import judge
from app.agents.workspace import WorkspaceManager
from app.config import Settings

log = logging.getLogger(__name__)

TAIL_LINES = 60
#: Longer agent output lines are cut (they still reach the log, the stream and the tail, bounded).
MAX_LINE_CHARS = 4000
CHUNK_BYTES = 65536
ENTRYPOINT = Path(__file__).resolve().parents[2] / "agent-images" / "entrypoint" / "jervis_entrypoint.py"


class LocalRunner:
    def __init__(self, workspaces: WorkspaceManager, settings: Settings, *, entrypoint: Path = ENTRYPOINT,
                 agents: LocalAgents | None = None, environ: Mapping[str, str] | None = None) -> None:
        self._workspaces = workspaces
        self._settings = settings
        self._entrypoint = entrypoint
        self.agents = agents or LocalAgents(settings)
        self._environ = os.environ if environ is None else environ
        """The service's environment, which agents' variables are picked from by name."""

    def _env(self, job: AgentJob, agent_env: dict[str, str]) -> dict[str, str]:
        return local_agent_env(self._environ, self._settings, job, agent_env)

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        agent_env: dict[str, str] = {}
        if job.entrypoint_mode == "agent":  # git and test modes run no agent
            try:
                agent_env = await self.agents.env(job.agent_type, log=_progress_sink(on_log))
            except AiderInstallError as exc:
                return judge(self._workspaces, job, exit_code=None, log_tail=str(exc)[-2000:],
                             failure=f"Aider could not be installed: {str(exc).splitlines()[0]}")
        await prepare()  # a local process never survives the service, so there is nothing to re-attach to
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(self._entrypoint),
            cwd=job.workspace, env=self._env(job, agent_env),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so cancel kills the agent's children too
        )
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        # Named like the Job it stands for: the attempt is in the name of every log line.
        reader = asyncio.create_task(_pump(proc, tail, job_name(job), on_log))
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that arrives as the
            # agent exits, and the cancelled run would carry on.
            async with asyncio.timeout(job.timeout_seconds):
                await proc.wait()
        except TimeoutError:
            await _kill(proc)
            await reader
            return judge(self._workspaces, job, exit_code=proc.returncode, log_tail="\n".join(tail),
                         failure=f"Agent {job.agent_type} timed out after {job.timeout_seconds:g} s")
        except BaseException:  # cancelled: the run was cancelled, take the agent down with it
            await _kill(proc)
            reader.cancel()
            raise
        await reader
        return judge(self._workspaces, job, exit_code=proc.returncode, log_tail="\n".join(tail))


def _progress_sink(on_log: LogSink | None) -> Callable[[str], None]:
    """Install progress goes to the service log and, like agent output, to the run's stream."""

    def sink(line: str) -> None:
        log.info("%s", line)
        if on_log is not None:
            on_log(line)

    return sink


async def _pump(proc: asyncio.subprocess.Process, tail: deque[str], name: str, on_log: LogSink | None) -> None:
    assert proc.stdout is not None
    async for line in bounded_lines(proc.stdout):
        tail.append(line)
        log.info("[%s] %s", name, line)
        if on_log is not None:
            on_log(line)


async def bounded_lines(stream: asyncio.StreamReader, max_chars: int = MAX_LINE_CHARS) -> AsyncIterator[str]:
    """The stream's lines, each cut to `max_chars` with a note of what was dropped.

    Read in chunks rather than with readline(): a line longer than the reader's 64 KiB limit (a
    minified file echoed by an agent) would otherwise raise and stop the reading, and the agent
    would block on a full pipe."""
    pending = b""
    dropped = 0
    while chunk := await stream.read(CHUNK_BYTES):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            yield _cut(raw, dropped, max_chars)
            dropped = 0
        if len(pending) > max_chars * 4:  # a line still going: keep its head, count the rest
            dropped += len(pending) - max_chars * 4
            pending = pending[: max_chars * 4]
    if pending or dropped:
        yield _cut(pending, dropped, max_chars)


def _cut(raw: bytes, dropped: int, max_chars: int) -> str:
    line = raw.decode(errors="replace").rstrip()
    if len(line) <= max_chars and not dropped:
        return line
    return f"{line[:max_chars]} … (line cut at {max_chars} characters)"


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
