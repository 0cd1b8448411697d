"""KubernetesJobRunner against the fake API server, driven by the real `kubernetes` client."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob
from app.agents.job_spec import build_job, job_name
from app.agents.k8s_client import KubernetesApi, load_api_client
from app.agents.kubernetes import KubernetesJobRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.fixtures.service import configure_cluster
from tests.support import file_block, make_git_repo


@pytest.fixture
def runner(k8s: Any, root: Path, tmp_path: Path) -> KubernetesJobRunner:
    configure_cluster(k8s)
    settings = Settings(data_root=root, k8s_namespace="jervis", k8s_poll_seconds=0.3,
                        agent_concurrency={"aider": 1, "openhands": 2, "claude": 2, "junie": 1})
    api = KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig"))), "jervis")
    return KubernetesJobRunner(api, WorkspaceManager(root), settings)


def step(root: Path, name: str, instructions: str, *, step_index: int = 0) -> tuple[AgentJob, Any]:
    repo = make_git_repo(root / name)
    job = AgentJob(thread_id=f"thread-{name}-00000000", task_id=name, client_id="c1", agent_type="aider",
                   workspace=repo, step_index=step_index, timeout_seconds=60, expect_changes=True)
    brief = StepBrief(agent_type="command", instructions=instructions, task={"id": name})

    async def prepare() -> None:
        WorkspaceManager(root).prepare(repo, brief)
    return job, prepare


async def test_job_success_reports_the_files_git_saw_changed(runner, root: Path, k8s: Any) -> None:
    job, prepare = step(root, "ok", file_block("src/a.py", "a = 1"))
    lines: list[str] = []
    result = await runner.run(job, prepare=prepare, on_log=lines.append)
    assert result.success and result.changed_files == ["src/a.py"] and result.exit_code == 0
    assert any("wrote src/a.py" in line for line in lines)
    assert k8s.created == [job_name(job)]


async def test_agent_failure_is_a_failed_step(runner, root: Path) -> None:
    job, prepare = step(root, "bad", "@@FAIL compiler said no")
    result = await runner.run(job, prepare=prepare)
    assert not result.success and "compiler said no" in result.summary


async def test_finished_job_is_reused_not_recreated(runner, root: Path, k8s: Any) -> None:
    job, prepare = step(root, "again", file_block("b.py", "b = 2"))
    first = await runner.run(job, prepare=prepare)
    prepared: list[bool] = []

    async def record() -> None:
        prepared.append(True)

    second = await runner.run(job, prepare=record)
    assert first.success and second.success and second.changed_files == ["b.py"]
    assert k8s.created == [job_name(job)] and prepared == []


async def test_per_agent_limit_holds(runner, root: Path, k8s: Any) -> None:
    jobs = [step(root, f"par{i}", "@@SLEEP 1\n" + file_block(f"f{i}.py", "x")) for i in range(3)]
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            active = [j for j in k8s.jobs().values() if (j.get("status") or {}).get("active")]
            peak = max(peak, len(active))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        results = await asyncio.gather(*(runner.run(job, prepare=prepare) for job, prepare in jobs))
    finally:
        done.set()
        watcher.join()
    assert all(r.success for r in results)
    assert peak == 1 and len(k8s.created) == 3


async def test_an_earlier_attempt_still_running_is_retired_before_the_next_attempt_starts(
        runner, root: Path, k8s: Any, tmp_path: Path) -> None:
    """No two attempts of one step ever write the workspace at once: a stale attempt's Job (its
    runner died before deleting it) is deleted and gone before the next attempt's Job exists."""
    first, prepare_first = step(root, "stale", "@@SLEEP 30")
    await prepare_first()
    api = KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig-2"))), "jervis")
    await api.create_job(build_job(Settings(data_root=root, k8s_namespace="jervis"), first))
    stale = job_name(first)
    k8s.wait_for_job(stale, "Active")
    second = first.model_copy(update={"attempt": 2})
    brief = StepBrief(agent_type="command", instructions=file_block("fixed.py", "ok = True"), task={"id": "stale"})

    async def prepare_second() -> None:
        WorkspaceManager(root).prepare(second.workspace, brief)

    result = await runner.run(second, prepare=prepare_second)

    assert result.success and result.changed_files == ["fixed.py"]
    assert (stale, "Background") in k8s.deletes and not k8s.processes_alive(stale)
    assert k8s.created == [stale, job_name(second)]
    calls = k8s.requests
    deleted = next(i for i, (method, path) in enumerate(calls) if method == "DELETE" and stale in path)
    created = max(i for i, (method, path) in enumerate(calls) if method == "POST" and path.endswith("/jobs"))
    assert deleted < created  # the next attempt's Job was created only after the stale one was deleted
    assert "-a1-" in stale and "-a2-" in job_name(second)


async def test_other_steps_jobs_are_not_retired(runner, root: Path, k8s: Any) -> None:
    job, prepare = step(root, "neighbour", file_block("a.py", "a = 1"))
    other, prepare_other = step(root, "neighbour-2", "@@SLEEP 2\n" + file_block("b.py", "b = 2"),
                                step_index=1)
    results = await asyncio.gather(runner.run(other, prepare=prepare_other), runner.run(job, prepare=prepare))
    assert all(r.success for r in results) and k8s.deletes == []
