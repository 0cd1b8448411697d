"""Every wait of the Kubernetes Job runner ends at its deadline, against the fake API server made
to never schedule a pod, never finish a Job or never let a deleted Job go."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.agents.base import AgentJob
from app.agents.control import AgentControl, use_control
from app.agents.job_spec import build_job, job_name
from app.agents.k8s_client import KubernetesApi, LogStream, load_api_client
from app.agents.kubernetes import (
    AgentCapacityTimeoutError,
    JobDeletionTimeoutError,
    KubernetesJobRunner,
    KubernetesWaitError,
)
from app.agents.workspace import StepBrief, WorkspaceManager
from app.config import Settings
from tests.fixtures.service import configure_cluster
from tests.support import file_block, make_git_repo, wait_until

#: Every deadline of these tests; each test also bounds how long the runner took.
DEADLINE = 0.5
#: How much longer than its deadline a wait may take on a loaded machine: far below the 60 s agent
#: timeout and the 300 s default start allowance that would otherwise end it.
SLACK = 15


def settings(root: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_root": root, "k8s_namespace": "jervis", "k8s_poll_seconds": 0.3, "k8s_capacity_wait_seconds": DEADLINE,
        "k8s_start_timeout_seconds": DEADLINE, "k8s_delete_timeout_seconds": DEADLINE,
        "agent_concurrency": {"aider": 1, "openhands": 2, "claude": 2, "junie": 1},
    }
    return Settings(**(values | overrides))


def api(k8s: Any, tmp_path: Path) -> KubernetesApi:
    return KubernetesApi(load_api_client(str(k8s.kubeconfig(tmp_path / "kubeconfig"))), "jervis")


def runner(k8s: Any, root: Path, tmp_path: Path, **overrides: Any) -> KubernetesJobRunner:
    return KubernetesJobRunner(api(k8s, tmp_path), WorkspaceManager(root), settings(root, **overrides))


def step(root: Path, name: str, instructions: str, *, timeout: int = 60, attempt: int = 1) -> tuple[AgentJob, Any]:
    repo = make_git_repo(root / name)
    job = AgentJob(thread_id=f"thread-{name}-00000000", task_id=name, client_id="c1", agent_type="aider",
                   workspace=repo, timeout_seconds=timeout, expect_changes=True, attempt=attempt)
    brief = StepBrief(agent_type="command", instructions=instructions, task={"id": name})

    async def prepare() -> None:
        WorkspaceManager(root).prepare(repo, brief)
    return job, prepare


async def test_a_pod_never_scheduled_fails_the_attempt_at_the_start_deadline(k8s, root: Path, tmp_path: Path) -> None:
    configure_cluster(k8s)
    k8s.configure(unschedulable=True)
    job, prepare = step(root, "pending", file_block("a.py", "a = 1"))
    started = time.monotonic()
    result = await runner(k8s, root, tmp_path).run(job, prepare=prepare)
    took = time.monotonic() - started
    name = job_name(job)
    assert not result.success
    assert f"waited {DEADLINE:g} s for the pod of Job {name} to start" in result.summary
    assert "Pending, Unschedulable: 0/1 nodes are available" in result.summary
    assert (name, "Background") in k8s.deletes and name not in k8s.jobs()
    assert took < DEADLINE + SLACK, f"the start deadline of {DEADLINE} s took {took:.1f} s"


async def test_a_job_the_cluster_never_finishes_fails_the_attempt_at_its_deadline(
        k8s, root: Path, tmp_path: Path) -> None:
    """The agent is done, but no controller gives the Job a final condition (nor enforces
    activeDeadlineSeconds): the runner stops waiting after the agent's timeout plus the start allowance."""
    configure_cluster(k8s)
    k8s.configure(image_commands={"*": ["sh", "-c", "echo working"]}, finish_jobs=False)
    job, prepare = step(root, "stuck", file_block("a.py", "a = 1"), timeout=1)
    started = time.monotonic()
    result = await runner(k8s, root, tmp_path).run(job, prepare=prepare)
    took = time.monotonic() - started
    name = job_name(job)
    assert not result.success
    assert f"waited {1 + DEADLINE:g} s for Job {name} to finish (agent timeout 1 s + start allowance" in result.summary
    assert "working" in result.log_tail  # what the agent said is kept
    assert (name, "Background") in k8s.deletes
    assert took < 1 + DEADLINE + SLACK, f"a deadline of {1 + DEADLINE} s took {took:.1f} s"


async def test_no_free_slot_in_the_namespace_fails_the_attempt_at_the_capacity_deadline(
        k8s, root: Path, tmp_path: Path) -> None:
    k8s.configure(unschedulable=True)  # the other thread's Job stays active, and no process runs
    other, _ = step(root, "busy", "x")
    await api(k8s, tmp_path).create_job(build_job(settings(root), other))
    job, prepare = step(root, "waiting", file_block("a.py", "a = 1"))
    started = time.monotonic()
    with pytest.raises(AgentCapacityTimeoutError) as raised:
        await runner(k8s, root, tmp_path).run(job, prepare=prepare)
    took = time.monotonic() - started
    assert str(raised.value) == (f"waited {DEADLINE:g} s for a free aider slot among the Jobs of namespace jervis "
                                 "(1 aider Job(s) running, limit 1)")
    assert k8s.created == [job_name(other)]  # its own Job was never created
    assert took < DEADLINE + SLACK, f"the capacity deadline of {DEADLINE} s took {took:.1f} s"


async def test_no_free_slot_in_this_pod_fails_the_attempt_at_the_capacity_deadline(
        k8s, root: Path, tmp_path: Path) -> None:
    k8s.configure(unschedulable=True)
    jobs = runner(k8s, root, tmp_path, k8s_start_timeout_seconds=60)
    first, prepare_first = step(root, "holder", file_block("a.py", "a = 1"))
    holder = asyncio.create_task(jobs.run(first, prepare=prepare_first))
    try:
        await asyncio.to_thread(wait_until, lambda: k8s.jobs() or None, 10, "the first Job")
        second, prepare_second = step(root, "queued", file_block("b.py", "b = 2"))
        with pytest.raises(AgentCapacityTimeoutError, match=rf"waited {DEADLINE:g} s for a free aider slot in this "
                                                            r"pod \(1 aider agent\(s\) of this pod still running"):
            await asyncio.wait_for(jobs.run(second, prepare=prepare_second), 5)
    finally:
        holder.cancel()
        await asyncio.gather(holder, return_exceptions=True)
    assert k8s.created == [job_name(first)]


async def test_a_deleted_job_that_stays_fails_the_next_attempt_at_the_delete_deadline(
        k8s, root: Path, tmp_path: Path) -> None:
    """A finalizer nobody removes keeps an earlier attempt's Job: the next attempt must not start beside it."""
    k8s.configure(unschedulable=True, finalizer="example.com/hold")
    first, _ = step(root, "lingering", "x")
    stale = job_name(first)
    await api(k8s, tmp_path).create_job(build_job(settings(root), first))
    second, prepare_second = step(root, "lingering-2", file_block("a.py", "a = 1"))
    second = second.model_copy(update={"thread_id": first.thread_id, "attempt": 2})
    started = time.monotonic()
    with pytest.raises(JobDeletionTimeoutError) as raised:
        await runner(k8s, root, tmp_path).run(second, prepare=prepare_second)
    took = time.monotonic() - started
    assert str(raised.value) == (f"waited {DEADLINE:g} s for Job {stale} to disappear after its deletion "
                                 "(it still exists; finalizers ['example.com/hold'])")
    assert isinstance(raised.value, KubernetesWaitError) and isinstance(raised.value, TimeoutError)
    assert (stale, "Background") in k8s.deletes and k8s.created == [stale]
    assert took < DEADLINE + SLACK, f"the delete deadline of {DEADLINE} s took {took:.1f} s"


async def test_a_stopped_log_stream_ends_at_once_while_the_agent_is_silent(k8s, root: Path, tmp_path: Path) -> None:
    """A followed log blocks in a read until the agent's next line: `stop()` shuts the socket, so
    the thread returns now (else it would outlive the run and hold up the process's exit)."""
    k8s.configure(image_commands={"*": ["sh", "-c", "echo started; sleep 30"]})
    job, _ = step(root, "silent", "x")
    client = api(k8s, tmp_path)
    await client.create_job(build_job(settings(root), job))
    pod = next(iter(k8s.pods()))
    k8s.wait_for_job(job_name(job), "Active")
    lines: list[str] = []
    stream = LogStream()
    follower = threading.Thread(target=client.follow_logs, args=(pod, lines.append, stream))
    follower.start()
    await asyncio.to_thread(wait_until, lambda: lines or None, 10, "the first log line")
    stopped = time.monotonic()
    stream.stop()
    await asyncio.to_thread(follower.join, 5)
    assert not follower.is_alive() and lines == ["started"]
    assert time.monotonic() - stopped < 2
    assert stream.opened and stream.stopped


async def test_waiting_for_a_job_watches_it_instead_of_polling_in_a_loop(k8s, root: Path, tmp_path: Path) -> None:
    """The watch resumes from the Job's resourceVersion, so it returns when the Job changes, not at once."""
    configure_cluster(k8s)
    job, prepare = step(root, "watched", "@@SLEEP 2\n" + file_block("a.py", "a = 1"))
    result = await runner(k8s, root, tmp_path).run(job, prepare=prepare)
    assert result.success
    watches = [path for method, path in k8s.requests if "watch=true" in path]
    assert watches and all("resourceVersion=" in path for path in watches)
    assert len(watches) <= 10, f"{len(watches)} watches for a 2 s Job"


async def test_a_user_cancel_deletes_the_job_even_when_the_task_is_not_cancelled(
        k8s, root: Path, tmp_path: Path) -> None:
    """The run's `AgentControl` says "cancelled" directly: the runner deletes the Job at its next
    poll even if the task's cancellation has not reached it (the graph runs nodes in tasks of its own)."""
    configure_cluster(k8s)
    k8s.configure(image_commands={"*": ["sh", "-c", "echo working; sleep 30"]})
    job, prepare = step(root, "cancelled", file_block("a.py", "a = 1"))
    control = AgentControl()

    async def in_run() -> object:
        use_control(control)  # as the run manager does at the start of the run task
        return await runner(k8s, root, tmp_path).run(job, prepare=prepare)

    running = asyncio.create_task(in_run())
    await asyncio.to_thread(wait_until, lambda: k8s.jobs() or None, 10, "the Job")
    control.cancel()  # and no running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(running, SLACK)
    assert (job_name(job), "Background") in k8s.deletes
