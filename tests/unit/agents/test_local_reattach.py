"""LocalRunner re-attaching to an agent an earlier service process started (issue 12, item 2).

The service's death is a runner whose run is suspended (detach) and cancelled: its agent keeps
running. A new LocalRunner on the same workspace stands for the restarted service or the pod that
adopted the run. The agent's command appends to a counter file outside the workspace (in a folder
its sandbox may write, `AGENT_SANDBOX_WRITABLE`), so every start of it is counted; real processes
throughout.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.agents.base import AgentJob, AgentResult
from app.agents.control import AgentControl, use_control
from app.agents.git_config_guard import GitConfigGuard
from app.agents.job_spec import job_name, step_label
from app.agents.local import GIT_CONFIG_NOTE, LocalRunner
from app.agents.local_process import (
    EXIT_FILE,
    LOG_FILE,
    RECORD_FILE,
    AgentProcess,
    ProcessRecord,
    RunStateError,
    runs_dir,
)
from app.agents.log_lines import LogFollower
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.support import SCRIPTED_AGENT, file_block
from tests.unit.agents.test_local import agent_pids, alive, wait_for_agent


@pytest.fixture
def starts(tmp_path: Path) -> Path:
    """One line per start of the agent."""
    (tmp_path / "counter").mkdir()
    return tmp_path / "counter" / "starts.txt"


def counted_runner(manager: WorkspaceManager, starts: Path) -> LocalRunner:
    command = ["sh", "-c", f"echo started >> {shlex.quote(str(starts))} && exec {shlex.join(SCRIPTED_AGENT)}"]
    return LocalRunner(manager, Settings(local_agent_command=command, agent_sandbox_writable=[str(starts.parent)]))


def step_job(workspace: Path, *, attempt: int = 1, timeout: float = 30) -> AgentJob:
    return AgentJob(thread_id="thread-t1-abcd", task_id="t1", client_id="c1", agent_type="command",
                    workspace=workspace, attempt=attempt, timeout_seconds=timeout)


class Preparation:
    """The runner's `prepare`: writes the hand-over files and counts how often it was asked to."""

    def __init__(self, manager: WorkspaceManager, workspace: Path, instructions: str) -> None:
        self.manager, self.workspace, self.instructions = manager, workspace, instructions
        self.calls = 0

    async def __call__(self) -> None:
        self.calls += 1
        self.manager.prepare(self.workspace, StepBrief(agent_type="command", instructions=self.instructions,
                                                       task={"id": "t1"}))


async def run_then_suspend(runner: LocalRunner, job: AgentJob, prepare: Preparation, marker: str) -> list[int]:
    """Start the step, wait for `marker` in the agent's output, then suspend the run as a
    shutdown does (detach, cancel); returns the agent's pids, which must still run."""
    control = AgentControl()
    lines: list[str] = []

    async def run() -> AgentResult:
        use_control(control)
        return await runner.run(job, prepare=prepare, on_log=lines.append)

    task = asyncio.create_task(run())
    pids = await wait_for_agent(job.workspace, lines, marker)
    control.suspend("shutdown")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(alive(pid) for pid in pids), "a suspended run must leave its agent running"
    return pids


def no_run_state(manager: WorkspaceManager, workspace: Path) -> bool:
    """Record, log and exit status are gone from the service's folder, and none is in the workspace."""
    return not any(runs_dir(manager.root).iterdir()) and not (workspace / ".jervis" / "runs").exists()


async def until(probe: Callable[[], object], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_new_runner_reattaches_to_the_agent_a_suspended_run_left_running(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 1.5\n" + file_block("a.py", "a = 1"))
    await run_then_suspend(counted_runner(manager, starts), step_job(repo), prepare, "sleeping 1.5")

    adopted = Preparation(manager, repo, "never used: the agent already runs")
    lines: list[str] = []
    result = await counted_runner(manager, starts).run(step_job(repo), prepare=adopted, on_log=lines.append)

    assert adopted.calls == 0 and prepare.calls == 1
    assert starts.read_text().splitlines() == ["started"]  # the agent ran once
    assert (result.success, result.exit_code, result.changed_files) == (True, 0, ["a.py"])
    assert "sleeping 1.5s" in lines and "wrote a.py" in lines  # replayed, then followed
    assert result.log_tail.splitlines() == lines
    assert no_run_state(manager, repo)  # record, log and exit status go once judged
    assert agent_pids(repo) == []


async def test_an_agent_that_ended_unwatched_is_judged_without_running_it_again(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 0.3\n@@FAIL tests do not pass\n" + file_block("a.py", "a = 1"))
    await run_then_suspend(counted_runner(manager, starts), step_job(repo), prepare, "sleeping 0.3")
    await until(lambda: not agent_pids(repo), "the agent to end while nobody watches")

    adopted = Preparation(manager, repo, "never used")
    result = await counted_runner(manager, starts).run(step_job(repo), prepare=adopted)

    assert adopted.calls == 0 and starts.read_text().splitlines() == ["started"]
    assert (result.success, result.exit_code) == (False, 0) and "tests do not pass" in result.summary
    assert "wrote a.py" in result.log_tail
    assert no_run_state(manager, repo)


async def test_a_record_of_a_dead_or_reused_pid_starts_the_agent_afresh(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    """The recorded pid now belongs to another process (another start time): it is not ours to
    follow or to kill, and the step starts again from its hand-over."""
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)  # noqa: ASYNC220 (returns at once)
    try:
        job = step_job(repo)
        directory = runs_dir(manager.root) / job_name(job)
        directory.mkdir()
        (directory / LOG_FILE).write_text("output of a process that died with the machine\n")
        (directory / RECORD_FILE).write_text(ProcessRecord(
            job_name=job_name(job), thread_id=job.thread_id, step=step_label(job), workspace=str(repo),
            pid=stranger.pid, start_ticks=1, boot_id="an earlier boot", started_at=time.time() - 5,
        ).model_dump_json())
        prepare = Preparation(manager, repo, file_block("a.py", "a = 1"))
        lines: list[str] = []

        result = await counted_runner(manager, starts).run(job, prepare=prepare, on_log=lines.append)

        assert prepare.calls == 1 and starts.read_text().splitlines() == ["started"]
        assert result.success and result.changed_files == ["a.py"]
        assert not any("died with the machine" in line for line in lines)
        assert stranger.poll() is None  # the stranger holding the pid was left alone
        assert no_run_state(manager, repo)
    finally:
        stranger.kill()
        stranger.wait()


async def test_cancelling_a_reattached_agent_kills_its_whole_group(manager: WorkspaceManager, repo: Path,
                                                                   starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 1.5\n" + file_block("late.txt", "written after the sleep"))
    pids = await run_then_suspend(counted_runner(manager, starts), step_job(repo), prepare, "sleeping 1.5")
    lines: list[str] = []
    adopted = asyncio.create_task(counted_runner(manager, starts).run(
        step_job(repo), prepare=Preparation(manager, repo, "never used"), on_log=lines.append))
    await until(lambda: "sleeping 1.5s" in lines, "the re-attached runner to replay the log")

    adopted.cancel()  # a user's cancel: no detach
    with pytest.raises(asyncio.CancelledError):
        await adopted

    assert not any(alive(pid) for pid in pids) and agent_pids(repo) == []
    assert no_run_state(manager, repo)
    await asyncio.sleep(1.3)  # past the moment the agent would have written the file
    assert not (repo / "late.txt").exists()


async def test_an_earlier_attempt_left_running_is_stopped_before_the_next_attempt_starts(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    first = Preparation(manager, repo, "@@SLEEP 30\n" + file_block("late.txt", "attempt 1"))
    pids = await run_then_suspend(counted_runner(manager, starts), step_job(repo), first, "sleeping 30")

    second = Preparation(manager, repo, file_block("a.py", "a = 2"))
    result = await counted_runner(manager, starts).run(step_job(repo, attempt=2), prepare=second)

    assert second.calls == 1 and starts.read_text().splitlines() == ["started", "started"]
    assert not any(alive(pid) for pid in pids)
    assert result.success and result.changed_files == ["a.py"] and not (repo / "late.txt").exists()
    assert no_run_state(manager, repo)


async def test_a_reattached_agent_times_out_by_its_start_not_by_the_reattach(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 30\n")
    pids = await run_then_suspend(counted_runner(manager, starts), step_job(repo, timeout=3), prepare, "sleeping 30")
    await asyncio.sleep(1.5)  # the service is down for a while
    reattached = time.monotonic()

    result = await counted_runner(manager, starts).run(step_job(repo, timeout=3), prepare=prepare)

    assert time.monotonic() - reattached < 3  # what was left of the 3 s, not 3 s more
    assert not result.success and "timed out after 3 s" in result.summary
    assert not any(alive(pid) for pid in pids) and starts.read_text().splitlines() == ["started"]


def test_a_log_past_its_cap_is_emptied_once_read_and_followed_on(tmp_path: Path) -> None:
    path = tmp_path / "agent.log"
    with path.open("ab", buffering=0) as agent, LogFollower.open(path, max_bytes=100) as follower:
        # the agent's side: O_APPEND, as the runner opens it
        agent.write(b"x" * 120 + b"\nfirst\n")
        assert follower.read() == ["x" * 120, "first"]
        assert path.stat().st_size == 0
        agent.write(b"second\nunfinished")
        assert follower.read() == ["second"]
        assert follower.finish() == ["unfinished"]


async def test_a_suspended_agents_state_is_in_the_services_folder_not_the_workspace(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 1.5\n" + file_block("a.py", "a = 1"))
    await run_then_suspend(counted_runner(manager, starts), step_job(repo), prepare, "sleeping 1.5")
    folder = runs_dir(manager.root) / job_name(step_job(repo))

    assert sorted(path.name for path in folder.iterdir()) == sorted([RECORD_FILE, LOG_FILE, GIT_CONFIG_NOTE])
    assert "sleeping 1.5s" in (folder / LOG_FILE).read_text()
    assert not (repo / ".jervis" / "runs").exists() and folder.stat().st_mode & 0o077 == 0
    result = await counted_runner(manager, starts).run(step_job(repo), prepare=prepare)
    assert result.success and not folder.exists()
    assert EXIT_FILE not in {path.name for path in runs_dir(manager.root).iterdir()}


async def test_a_reattached_agent_whose_recorded_git_configuration_is_lost_fails(
        manager: WorkspaceManager, repo: Path, starts: Path) -> None:
    prepare = Preparation(manager, repo, "@@SLEEP 1\n" + file_block("a.py", "a = 1"))
    await run_then_suspend(counted_runner(manager, starts), step_job(repo), prepare, "sleeping 1")
    (runs_dir(manager.root) / job_name(step_job(repo)) / GIT_CONFIG_NOTE).unlink()

    result = await counted_runner(manager, starts).run(step_job(repo), prepare=prepare)

    assert not result.success and "git configuration as it was before the agent cannot be checked" in result.summary


def test_the_recorded_git_configuration_survives_its_serialisation(repo: Path) -> None:
    guard = GitConfigGuard.record(repo)
    restored = GitConfigGuard.from_json(guard.to_json())
    assert restored.before == guard.before and any(content is None for content in guard.before.values())
    with pytest.raises(ValueError, match="not a recorded git configuration"):
        GitConfigGuard.from_json('["not", "a", "record"]')


def test_the_follower_opens_no_link_and_no_fifo(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses.txt"
    target.write_text("x" * 200)
    (tmp_path / "link.log").symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):  # ELOOP: O_NOFOLLOW
        LogFollower.open(tmp_path / "link.log", max_bytes=100)
    os.mkfifo(tmp_path / "fifo.log")
    with pytest.raises(OSError, match="not a regular file"):
        LogFollower.open(tmp_path / "fifo.log")
    assert target.read_text() == "x" * 200


def test_the_runs_folder_is_the_services_own_and_never_a_link(tmp_path: Path) -> None:
    (tmp_path / "data-root-a").mkdir()
    folder = runs_dir(tmp_path / "data-root-a")
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    (tmp_path / "data-root-b").mkdir()
    (tmp_path / "data-root-b" / ".orchestrator").symlink_to(tmp_path / "data-root-a" / ".orchestrator")
    with pytest.raises(RunStateError):
        runs_dir(tmp_path / "data-root-b")


def test_folders_of_runs_never_resumed_are_swept_once_their_agent_ended_long_ago(tmp_path: Path) -> None:
    runs = runs_dir(tmp_path)
    alive_pid = os.getpid()
    stat = Path(f"/proc/{alive_pid}/stat").read_text().rsplit(")", 1)[1].split()
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    for name, pid, ticks, age in (("ended-long-ago", 4194303, 1, 8 * 86400), ("ended-lately", 4194303, 1, 3600),
                                  ("still-running", alive_pid, int(stat[19]), 8 * 86400)):
        (runs / name).mkdir()
        (runs / name / RECORD_FILE).write_text(ProcessRecord(
            job_name=name, thread_id="t", step="g0-s0-r0", workspace=str(tmp_path), pid=pid, start_ticks=ticks,
            boot_id=boot, started_at=time.time() - age).model_dump_json())

    assert AgentProcess.sweep(runs) == ["ended-long-ago"]
    assert sorted(path.name for path in runs.iterdir()) == ["ended-lately", "still-running"]
