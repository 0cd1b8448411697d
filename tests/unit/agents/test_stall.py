"""The progress watchdog (app/agents/stall.py): an agent step with no output and no change in the
workspace for AGENT_STALL_SECONDS is stopped as a failed attempt, well before its timeout; real
agent processes (the scripted agent, shell loops) on both runners (the Kubernetes one on the fake API)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.agents.job_spec import job_name
from app.agents.kubernetes import KubernetesJobRunner
from app.agents.local import ENTRYPOINT, LocalRunner
from app.agents.local_process import runs_dir
from app.agents.stall import StallWatch, workspace_fingerprint
from app.agents.workspace import WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics
from tests.fixtures.k8s import KILL_GRACE_SECONDS
from tests.fixtures.service import configure_cluster
from tests.support import SCRIPTED_AGENT, file_block, wait_until
from tests.unit.agents.test_kubernetes_deadlines import api, step
from tests.unit.agents.test_kubernetes_deadlines import settings as k8s_settings
from tests.unit.agents.test_local import agent_pids, alive, hand_over, job
from tests.unit.agents.test_local_reattach import Preparation, run_then_suspend

STALL = 1.0
STALLED = f"Stalled: no output and no change in the workspace for {STALL:g} s"


def runner(manager: WorkspaceManager, command: list[str] | None = None, *, stall: float = STALL,
           metrics: Metrics | None = None) -> LocalRunner:
    return LocalRunner(manager, Settings(local_agent_command=command or SCRIPTED_AGENT, agent_stall_seconds=stall),
                       metrics=metrics)


def stalls(metrics: Metrics, agent: str) -> float | None:
    return metrics.registry.get_sample_value("jervis_agent_stalls_total", {"agent": agent})


def silent_for(seconds: float, then: list[str], *, each: str) -> list[str]:
    """A shell agent that runs `each` every 0.25 s for `seconds`, then execs `then`."""
    rounds = int(seconds / 0.25)
    return ["sh", "-c", f"i=0; while [ $i -lt {rounds} ]; do {each}; sleep 0.25; i=$((i+1)); done; "
                        f"exec {shlex.join(then)}"]


# --- the workspace fingerprint ---------------------------------------------------------------


def test_the_fingerprint_sees_a_write_a_new_file_a_deletion_and_a_rename(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    code = tmp_path / "src" / "a.py"
    code.write_text("a = 1\n")
    seen = [workspace_fingerprint(tmp_path)]
    assert workspace_fingerprint(tmp_path) == seen[0]  # nothing changed, the same fingerprint
    stat = code.stat()
    os.utime(code, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # same size, only the mtime moves
    seen.append(workspace_fingerprint(tmp_path))
    (tmp_path / "src" / "b.py").write_text("b = 2\n")
    seen.append(workspace_fingerprint(tmp_path))
    code.rename(tmp_path / "src" / "c.py")
    seen.append(workspace_fingerprint(tmp_path))
    (tmp_path / "src" / "b.py").unlink()
    seen.append(workspace_fingerprint(tmp_path))
    assert len(set(seen)) == len(seen), seen


def test_the_fingerprint_skips_git_and_jervis_and_is_bounded(tmp_path: Path) -> None:
    for folder in (".git", ".jervis/runs"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "a.py").write_text("a = 1\n")
    before = workspace_fingerprint(tmp_path)
    (tmp_path / ".git" / "index").write_text("changed by git")
    (tmp_path / ".jervis" / "runs" / "agent.log").write_text("output is counted as output, not as a change\n")
    assert workspace_fingerprint(tmp_path) == before
    for index in range(30):
        (tmp_path / f"f{index}.txt").write_text("x")
    assert workspace_fingerprint(tmp_path, max_entries=10)[0] == 10


def test_only_coding_agent_steps_are_watched(tmp_path: Path) -> None:
    step_job = job(tmp_path)
    assert StallWatch.for_job(step_job, 600).enabled
    assert not StallWatch.for_job(step_job.model_copy(update={"mode": "test"}), 600).enabled
    assert not StallWatch.for_job(step_job.model_copy(update={"mode": "commit"}), 600).enabled
    assert not StallWatch.for_job(step_job, 0).enabled


# --- the local runner ------------------------------------------------------------------------


async def test_a_silent_agent_is_stopped_as_stalled_long_before_its_timeout(manager: WorkspaceManager,
                                                                           repo: Path) -> None:
    metrics = Metrics()
    seen: set[int] = set()
    started = time.monotonic()
    result = await runner(manager, metrics=metrics).run(
        job(repo, timeout=60), prepare=hand_over(manager, repo, "@@SLEEP 30\n" + file_block("late.py", "x = 1")),
        on_log=lambda _: seen.update(agent_pids(repo)))
    took = time.monotonic() - started
    assert (result.success, result.summary) == (False, STALLED)
    assert STALL <= took < 8, f"stalled after {took:.1f} s"
    assert "sleeping 30s" in result.log_tail  # what it said before it went quiet
    assert seen and not any(alive(pid) for pid in seen) and agent_pids(repo) == []
    assert not any(runs_dir(manager.root).iterdir()) and not (repo / "late.py").exists()
    assert stalls(metrics, "command") == 1


async def test_an_agent_that_keeps_printing_is_not_stalled(manager: WorkspaceManager, repo: Path) -> None:
    command = silent_for(3 * STALL, SCRIPTED_AGENT, each="echo thinking")
    metrics = Metrics()
    result = await runner(manager, command, metrics=metrics).run(
        job(repo), prepare=hand_over(manager, repo, file_block("a.py", "a = 1")))
    assert result.success, result.summary
    assert "thinking" in result.log_tail and stalls(metrics, "command") is None


async def test_an_agent_that_prints_nothing_but_keeps_changing_files_is_not_stalled(manager: WorkspaceManager,
                                                                                   repo: Path) -> None:
    command = silent_for(3 * STALL, SCRIPTED_AGENT, each="echo $i > progress.txt")
    lines: list[str] = []
    result = await runner(manager, command).run(
        job(repo), prepare=hand_over(manager, repo, file_block("a.py", "a = 1")), on_log=lines.append)
    assert result.success, result.summary
    assert (repo / "progress.txt").read_text() == f"{int(3 * STALL / 0.25) - 1}\n"  # the loop ran to its end
    assert not any(line.strip().isdigit() for line in lines)  # and said nothing meanwhile


async def test_a_stall_time_of_zero_turns_the_watchdog_off(manager: WorkspaceManager, repo: Path) -> None:
    result = await runner(manager, stall=0).run(
        job(repo), prepare=hand_over(manager, repo, "@@SLEEP 1.5\n" + file_block("a.py", "a = 1")))
    assert result.success, result.summary
    assert result.changed_files == ["a.py"]


async def test_a_reattached_agent_gets_the_full_stall_time_from_the_reattach(manager: WorkspaceManager,
                                                                            repo: Path) -> None:
    """Its silence while no service watched it is not held against it (nor is it ignored after)."""
    stall = 1.5
    prepare = Preparation(manager, repo, "@@SLEEP 30\n")
    pids = await run_then_suspend(runner(manager, stall=stall), job(repo), prepare, "sleeping 30")
    await asyncio.sleep(stall + 0.5)  # the service is down longer than the stall time
    reattached = time.monotonic()

    result = await runner(manager, stall=stall).run(job(repo), prepare=prepare)

    took = time.monotonic() - reattached
    assert result.summary == f"Stalled: no output and no change in the workspace for {stall:g} s"
    assert stall <= took < stall + 6, f"stalled {took:.1f} s after the re-attach"
    assert prepare.calls == 1 and not any(alive(pid) for pid in pids)


# --- the Kubernetes runner -------------------------------------------------------------------


async def test_a_silent_job_is_deleted_as_stalled_and_its_agent_ends(k8s: Any, root: Path, tmp_path: Path) -> None:
    configure_cluster(k8s)
    metrics = Metrics()
    jobs = KubernetesJobRunner(api(k8s, tmp_path), WorkspaceManager(root),
                               k8s_settings(root, k8s_start_timeout_seconds=30, agent_stall_seconds=STALL),
                               metrics=metrics)
    job_, prepare = step(root, "silent", "@@SLEEP 60\n" + file_block("late.py", "x = 1"))
    started = time.monotonic()
    result = await jobs.run(job_, prepare=prepare)
    took = time.monotonic() - started
    name = job_name(job_)
    assert (result.success, result.summary) == (False, STALLED)
    assert took < 10, f"stalled after {took:.1f} s"
    assert "sleeping 60s" in result.log_tail
    assert (name, "Background") in k8s.deletes and name not in k8s.jobs()
    await asyncio.to_thread(wait_until, lambda: not k8s.processes_alive(name) or None, KILL_GRACE_SECONDS + 5,
                            "the stalled agent's processes to end")
    assert not (job_.workspace / "late.py").exists() and stalls(metrics, "aider") == 1


def keep_going(k8s: Any, each: str) -> None:
    """The cluster runs the entrypoint on an agent that runs `each` for three stall times, then the scripted agent."""
    command = silent_for(3 * STALL, SCRIPTED_AGENT, each=each)
    k8s.configure(image_commands={"*": [sys.executable, str(ENTRYPOINT)]},
                  extra_env={"AGENT_COMMAND": json.dumps(command)})


@pytest.mark.parametrize(("each", "name"), [("echo thinking", "chatty"), ("echo $i > progress.txt", "busy")])
async def test_a_job_that_keeps_logging_or_changing_files_is_not_stalled(k8s: Any, root: Path, tmp_path: Path,
                                                                         each: str, name: str) -> None:
    keep_going(k8s, each)
    jobs = KubernetesJobRunner(api(k8s, tmp_path), WorkspaceManager(root),
                               k8s_settings(root, k8s_start_timeout_seconds=30, agent_stall_seconds=STALL))
    job_, prepare = step(root, name, file_block("a.py", "a = 1"))
    result = await jobs.run(job_, prepare=prepare)
    assert result.success, result.summary
    assert (job_name(job_), "Background") not in k8s.deletes
