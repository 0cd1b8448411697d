"""A Job the runner must delete and cannot: retried, then logged, counted and said (in the step's
result, or to the run's `AgentControl` on a cancel) — against the fake API server told to refuse deletes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob, StopFailure
from app.agents.control import AgentControl, use_control
from app.agents.job_delete import DeleteRetry
from app.agents.job_spec import build_job, job_name
from app.agents.k8s_client import KubernetesApi, KubernetesError, load_api_client
from app.agents.kubernetes import KubernetesJobRunner
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from app.observability.metrics import Metrics
from tests.fixtures.service import configure_cluster
from tests.support import file_block, make_git_repo, wait_until

#: The start deadline that ends these attempts (their pods are never scheduled).
DEADLINE = 0.5
RETRY = DeleteRetry(attempts=3, backoff_seconds=0.05)
FORBIDDEN = "403 Forbidden"


def settings(root: Path) -> Settings:
    return Settings(data_root=root, k8s_namespace="jervis", k8s_poll_seconds=0.3, k8s_start_timeout_seconds=DEADLINE,
                    k8s_delete_timeout_seconds=10, agent_concurrency={"aider": 1})


def runner(k8s: Any, root: Path, tmp_path: Path, metrics: Metrics) -> KubernetesJobRunner:
    api = KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig"))), "jervis")
    return KubernetesJobRunner(api, WorkspaceManager(root), settings(root), metrics=metrics, delete_retry=RETRY)


def step(root: Path, name: str, instructions: str, *, attempt: int = 1) -> tuple[AgentJob, Any]:
    repo = make_git_repo(root / name)
    job = AgentJob(thread_id=f"thread-{name}-00000000", task_id=name, client_id="c1", agent_type="aider",
                   workspace=repo, timeout_seconds=60, expect_changes=True, attempt=attempt)
    brief = StepBrief(agent_type="command", instructions=instructions, task={"id": name})

    async def prepare() -> None:
        WorkspaceManager(root).prepare(repo, brief)
    return job, prepare


def not_deleted(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("jervis_agent_jobs_not_deleted_total", {"agent": "aider"}) or 0.0


async def test_a_job_that_cannot_be_deleted_is_retried_logged_counted_and_said_in_the_result(
        k8s: Any, root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    k8s.configure(unschedulable=True)  # the start deadline passes: the runner must delete the Job
    k8s.fail_deletes(100)
    metrics = Metrics()
    job, prepare = step(root, "undeletable", file_block("a.py", "a = 1"))
    name = job_name(job)

    with caplog.at_level("WARNING", logger="app.agents"):
        result = await runner(k8s, root, tmp_path, metrics).run(job, prepare=prepare)

    assert not result.success and f"waited {DEADLINE:g} s for the pod of Job {name} to start" in result.summary
    assert result.not_stopped == StopFailure(job=name, error=f"deleting Job {name} failed: {FORBIDDEN}")
    assert k8s.refused_deletes == [name] * RETRY.attempts and name in k8s.jobs()  # tried three times, still there
    messages = [r.getMessage() for r in caplog.records]
    assert sum(f"deleting Job {name} failed (attempt" in m for m in messages) == RETRY.attempts
    assert f"could not delete Job {name} (deleting Job {name} failed: {FORBIDDEN}): its aider agent may still be " \
           "running until its deadline" in messages
    assert not_deleted(metrics) == 1


async def test_a_delete_that_succeeds_after_one_failure_leaves_nothing_to_report(
        k8s: Any, root: Path, tmp_path: Path) -> None:
    k8s.configure(unschedulable=True)
    k8s.fail_deletes(1)
    metrics = Metrics()
    job, prepare = step(root, "second-try", file_block("a.py", "a = 1"))
    name = job_name(job)

    result = await runner(k8s, root, tmp_path, metrics).run(job, prepare=prepare)

    assert not result.success and result.not_stopped is None
    assert k8s.refused_deletes == [name] and k8s.deletes == [(name, "Background")] and name not in k8s.jobs()
    assert not_deleted(metrics) == 0


async def test_a_cancel_that_cannot_delete_the_job_tells_the_runs_control(k8s: Any, root: Path,
                                                                          tmp_path: Path) -> None:
    """A cancel has no step result: the failure goes to the run's `AgentControl`, whose end reads it."""
    configure_cluster(k8s)
    k8s.configure(image_commands={"*": ["sh", "-c", "echo working; sleep 30"]})
    metrics = Metrics()
    job, prepare = step(root, "cancelled", file_block("a.py", "a = 1"))
    name = job_name(job)
    control = AgentControl()

    async def in_run() -> object:
        use_control(control)  # as the run manager does at the start of the run task
        return await runner(k8s, root, tmp_path, metrics).run(job, prepare=prepare)

    running = asyncio.create_task(in_run())
    await asyncio.to_thread(wait_until, lambda: k8s.jobs() or None, 10, "the Job")
    k8s.fail_deletes(100)
    control.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, 15)

    assert control.not_stopped == [StopFailure(job=name, error=f"deleting Job {name} failed: {FORBIDDEN}")]
    assert len(k8s.refused_deletes) == RETRY.attempts and name in k8s.jobs()
    assert not_deleted(metrics) == 1


async def test_an_earlier_attempt_that_cannot_be_deleted_fails_the_next_attempt_before_it_starts(
        k8s: Any, root: Path, tmp_path: Path) -> None:
    k8s.configure(unschedulable=True)
    first, _ = step(root, "stale", "x")
    stale = job_name(first)
    api = KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig-2"))), "jervis")
    await api.create_job(build_job(settings(root), first))
    second = first.model_copy(update={"attempt": 2})
    k8s.fail_deletes(100)
    metrics = Metrics()

    async def prepare() -> None:
        raise AssertionError("the next attempt must not be prepared beside a running one")

    with pytest.raises(KubernetesError, match=f"Job {stale} could not be deleted .*: it may still be running"):
        await runner(k8s, root, tmp_path, metrics).run(second, prepare=prepare)

    assert k8s.created == [stale] and not_deleted(metrics) == 1
