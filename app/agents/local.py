"""Local agent runner: the agent entrypoint as a process on the workspace, as a Job would run it.

Development uses it without a cluster. The entrypoint (agent-images/entrypoint) is the same one
the agent images run, so changed files, results and git steps behave identically; which agent it
drives for each type is `LocalAgents`' choice (the local Aider by default).

Like a Job, the agent outlives the service (`local_process`): a service that restarts mid-step,
or the pod that adopts a suspended run, finds the process by the job's name and re-attaches to
it, or judges the result it left, instead of running the step again. The runner's state (record,
log, exit code, the git configuration as it was before the agent) lives in the service's own
folder under DATA_ROOT, which the agent cannot see, and the git configuration is checked and put
back after a re-attached agent too. A user's cancel and the
step's timeout stop it, and so does the progress watchdog (`stall`) when the agent neither prints
nor changes the workspace for `AGENT_STALL_SECONDS`; a run suspended for shutdown or a lost lease
leaves it running.
The subprocess gets an allow-listed environment (`agent_env`), never the service's whole one, and
runs in a bubblewrap sandbox that lets it write its workspace only (`sandbox`, AGENT_SANDBOX).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

from app.agents.agent_env import local_agent_env
from app.agents.base import AgentJob, AgentResult, LogSink, Prepare
from app.agents.control import cancel_requested, should_detach
from app.agents.git_config_guard import GitConfigGuard
from app.agents.job_spec import job_name, step_label
from app.agents.local_agents import AgentInstallError, LocalAgents, Resolved
from app.agents.local_process import AgentProcess, runs_dir
from app.agents.log_lines import LogFollower
from app.agents.outcome import judge
from app.agents.relay import AgentRelay, RelayLease
from app.agents.sandbox import AgentSandbox
from app.agents.stall import StallWatch
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics

log = logging.getLogger(__name__)

TAIL_LINES = 60
#: How often a running agent's log is read for new lines (its end is noticed at once, by pidfd).
LOG_POLL_SECONDS = 0.25
#: The entrypoint package; Python runs the folder (its `__main__.py`), as the agent images do.
ENTRYPOINT = Path(__file__).resolve().parents[2] / "agent-images" / "entrypoint" / "jervis_entrypoint"
#: The job folder's note holding the git configuration recorded before the agent started.
GIT_CONFIG_NOTE = "git-config.json"


class LocalRunner:
    def __init__(self, workspaces: WorkspaceManager, settings: Settings, *, entrypoint: Path = ENTRYPOINT,
                 agents: LocalAgents | None = None, log_poll_seconds: float = LOG_POLL_SECONDS,
                 environ: Mapping[str, str] | None = None, metrics: Metrics | None = None,
                 relay: AgentRelay | None = None) -> None:
        self._workspaces = workspaces
        self._metrics = metrics
        self._log_poll_seconds = log_poll_seconds
        self._settings = settings
        self._entrypoint = entrypoint
        self.agents = agents or LocalAgents(settings)
        self._environ = os.environ if environ is None else environ
        """The service's environment, which agents' variables are picked from by name."""
        self.sandbox = AgentSandbox(settings, self._environ, data_root=workspaces.root, relay=relay)

    def _env(self, job: AgentJob, agent_env: dict[str, str]) -> dict[str, str]:
        return local_agent_env(self._environ, self._settings, job, agent_env)

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        name = job_name(job)
        runs = runs_dir(self._workspaces.root)
        found = AgentProcess.find(runs, name)
        if found is not None:
            alive = found.alive()
            if alive or found.exit_code() is not None:
                if alive:
                    log.info("re-attaching to agent %s (pid %d)", name, found.pid)
                else:
                    log.info("agent %s ended while no service watched it: judging its result", name)
                guard, lost = _recorded_guard(found, job)
                lease = await self._relay_again(job, on_log) if alive else None
                try:
                    result = await self._guarded(found, job, on_log, guard, replay=True)
                finally:
                    await self.sandbox.release(lease)
                return _failed(result, lost) if lost is not None else result
            log.info("agent %s (pid %d) is gone without an exit status: starting it again", name, found.pid)
            found.kill_orphans()
            found.remove()
        agent_env: dict[str, str] = {}
        resolved: Resolved | None = None
        if job.entrypoint_mode == "agent":  # git and test modes run no agent
            try:
                resolved = await self.agents.resolve(job.agent_type, log=_progress_sink(on_log))
            except AgentInstallError as exc:
                program = self.agents.program(job.agent_type, planned=True)
                return judge(self._workspaces, job, exit_code=None, log_tail=str(exc)[-2000:],
                             failure=f"{program} could not be installed: {str(exc).splitlines()[0]}")
            agent_env = resolved.env
        confined = await self.sandbox.confine(job, [sys.executable, str(self._entrypoint)], self._env(job, agent_env),
                                              program=resolved.program if resolved else None)
        if confined.refusal is not None:
            return judge(self._workspaces, job, exit_code=None, log_tail=confined.refusal, failure=confined.refusal)
        try:  # the step's relay sockets are closed however it ends (suspended: left for the next service)
            await self._retire_other_attempts(runs, job, name)
            await prepare()
            await self.sandbox.provide_test_tools(job, confined)
            guard = GitConfigGuard.record(job.workspace) if job.entrypoint_mode != "git" else None
            process = AgentProcess.launch(runs, name, job.workspace, confined.argv, confined.env,
                                          thread_id=job.thread_id, step=step_label(job),
                                          notes={GIT_CONFIG_NOTE: guard.to_json()} if guard is not None else None)
            result = await self._guarded(process, job, on_log, guard, replay=False)
        finally:
            await self.sandbox.release(confined.lease)
        if resolved is None:
            return result
        return result.model_copy(update={"program": resolved.program, "fallback": resolved.fallback})

    async def _relay_again(self, job: AgentJob, on_log: LogSink | None) -> RelayLease | None:
        """The relay of a running sandboxed step this service re-attaches to (its sockets died with
        the service that started it)."""
        resolved = None
        if job.entrypoint_mode == "agent":
            try:
                resolved = await self.agents.resolve(job.agent_type, log=_progress_sink(on_log))
            except AgentInstallError:
                return None
        env = self._env(job, resolved.env if resolved else {})
        return await self.sandbox.reopen(job, env, program=resolved.program if resolved else None)

    def program(self, agent_type: str) -> str:
        return self.agents.program(agent_type)

    async def _guarded(self, process: AgentProcess, job: AgentJob, on_log: LogSink | None,
                       guard: GitConfigGuard | None, *, replay: bool) -> AgentResult:
        """`_watch`, then the git configuration as it was before the agent: a changed one is put
        back and fails the step. Put back on a cancel too; a suspended run leaves it to the adopter."""
        name = process.record.job_name
        try:
            result = await self._watch(process, job, on_log, replay=replay)
        except BaseException:
            if guard is not None and not should_detach() and (changed := guard.restore_changed()):
                log.warning("agent %s changed %s: put back", name, ", ".join(changed))
            raise
        if guard is not None and (changed := guard.restore_changed()):
            log.warning("agent %s changed %s: put back", name, ", ".join(changed))
            return _failed(result, (
                f"The agent changed the repository's git configuration ({', '.join(changed)}); it was put back "
                "(git runs outside the sandbox and must not run programs an agent configured)"))
        return result

    async def _retire_other_attempts(self, runs: Path, job: AgentJob, name: str) -> None:
        """No two attempts of one step run at once: an earlier one left running (its run was
        suspended and then cancelled) is stopped before the next starts on the same workspace.
        Folders of runs never resumed, whose agents ended long ago, go too (`AgentProcess.sweep`)."""
        AgentProcess.sweep(runs)
        for other in AgentProcess.of_step(runs, job.workspace, job.thread_id, step_label(job)):
            if other.record.job_name == name:
                other.close()
                continue
            if other.alive():
                log.warning("agent %s of an earlier attempt still runs: stopping it before %s",
                            other.record.job_name, name)
                await other.stop()
            else:
                other.kill_orphans()
            other.remove()

    async def _watch(self, process: AgentProcess, job: AgentJob, on_log: LogSink | None, *,
                     replay: bool) -> AgentResult:
        """Follow the agent's log until it ends (or its time is up, or it stalls), then judge its result."""
        with LogFollower.open(process.log_file) as follower:
            return await self._follow(process, follower, job, on_log, replay=replay)

    async def _follow(self, process: AgentProcess, follower: LogFollower, job: AgentJob, on_log: LogSink | None, *,
                      replay: bool) -> AgentResult:
        name = process.record.job_name
        tail: deque[str] = deque(maxlen=TAIL_LINES)

        def emit(lines: list[str]) -> None:
            for line in lines:
                tail.append(line)
                log.info("[%s] %s", name, line)  # named like the Job: the attempt is in every line
                if on_log is not None:
                    on_log(line)

        if replay:  # what it said before this process watched: its last lines, for the tail and the stream
            emit(follower.replay(TAIL_LINES))
        deadline = process.record.started_at + job.timeout_seconds  # a re-attach does not extend it
        stall = StallWatch.for_job(job, self._settings.agent_stall_seconds)
        try:
            await stall.start()  # a re-attach starts the clock afresh: its silence while unwatched is unknown
            while process.alive():
                received = follower.received
                emit(follower.read())
                if follower.received != received:
                    stall.output()
                if cancel_requested():
                    raise asyncio.CancelledError(f"run cancelled: stopping agent {name}")
                remaining = deadline - time.time()
                if remaining <= 0:
                    await process.stop()
                    emit(follower.finish())
                    return self._judged(process, job, tail,
                                        failure=f"Agent {job.agent_type} timed out after {job.timeout_seconds:g} s")
                if await stall.stalled():
                    log.warning("agent %s stalled: nothing printed or changed for %g s", name, stall.seconds)
                    if self._metrics is not None:
                        self._metrics.agent_stalled(job.agent_type)
                    await process.stop()
                    emit(follower.finish())
                    return self._judged(process, job, tail, failure=stall.summary())
                await process.wait(min(remaining, self._log_poll_seconds))
        except BaseException:
            if should_detach():  # suspended: the agent keeps working for whoever adopts the run
                log.info("run suspended: agent %s (pid %d) left running", name, process.pid)
                process.release()
                raise
            await process.stop()  # cancelled: the agent must not outlive its run
            process.remove()
            raise
        if not await process.group_gone():  # the sandbox's last processes end a moment after its leader
            log.info("agent %s ended; processes of its group still run", name)
        emit(follower.finish())
        return self._judged(process, job, tail)

    def _judged(self, process: AgentProcess, job: AgentJob, tail: deque[str], *,
                failure: str | None = None) -> AgentResult:
        result = judge(self._workspaces, job, exit_code=process.exit_code(), log_tail="\n".join(tail),
                       failure=failure)
        process.remove()
        return result


def _recorded_guard(process: AgentProcess, job: AgentJob) -> tuple[GitConfigGuard | None, str | None]:
    """The git configuration recorded when the agent was launched (None for a git step), or why
    it cannot be checked: then the step fails, for an unchecked configuration may run anything."""
    if job.entrypoint_mode == "git":
        return None, None
    try:
        text = process.note(GIT_CONFIG_NOTE)
        if text is not None:
            return GitConfigGuard.from_json(text), None
        problem = "it is missing"
    except (OSError, ValueError) as exc:
        problem = f"it is unreadable ({exc})"
    log.error("agent %s: the git configuration recorded at its launch %s", process.record.job_name, problem)
    return None, (f"The repository's git configuration as it was before the agent cannot be checked ({problem}): "
                  "the step is not trusted")


def _failed(result: AgentResult, reason: str) -> AgentResult:
    return result.model_copy(update={"success": False, "summary": reason})


def _progress_sink(on_log: LogSink | None) -> Callable[[str], None]:
    """Install progress goes to the service log and, like agent output, to the run's stream."""

    def sink(line: str) -> None:
        log.info("%s", line)
        if on_log is not None:
            on_log(line)

    return sink
