"""Suspension and fencing with two pods on one MongoDB, in-process (`tests/fixtures/pods.py`).

A pod that shuts down, or whose lock slot another pod took over, must leave the run to the pod
that adopts it: the agent Job keeps running (the adopter re-attaches to it by name), and the
pod that let go records, pushes and deletes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.schemas.kotlin import OrchestrateRequest
from app.texts import CS
from tests.fixtures.llm_server import Reply
from tests.fixtures.pods import Pod, start_pod
from tests.fixtures.service import configure_cluster
from tests.support import (
    classification,
    code_task_script,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    until,
)

pytestmark = pytest.mark.slow


def skewed_clock() -> float:
    """A pod whose clock is far behind: to every other pod its heartbeats look long silent."""
    return time.time() - 10_000


@pytest.fixture
async def pods(mongo_server: Any, llm: Any, kotlin: Any, kb: Any, k8s: Any,
               tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """`pods(pod_id, lock_clock=…, **settings)` starts a pod; all share one database and cluster."""
    configure_cluster(k8s)
    suffix = new_task_id()[:10]
    base = {"mongodb_url": mongo_server.url, "mongodb_database": f"svc_{suffix}",
            "checkpoint_database": f"ckpt_{suffix}", "ollama_url": llm.url, "local_model": "test-model",
            "kotlin_server_url": kotlin.url, "knowledgebase_url": kb.url, "data_root": tmp_path / "data",
            "heartbeat_dead_seconds": 10, "kb_timeout_seconds": 2, "llm_retry_base_delay": 0.05,
            "agent_runner": "kubernetes", "kubeconfig": str(k8s.kubeconfig(tmp_path / "kubeconfig")),
            "k8s_namespace": "jervis", "k8s_poll_seconds": 0.5, "shutdown_grace_seconds": 0.2}
    async with AsyncExitStack() as stack:
        async def start(pod_id: str, *, lock_clock: Callable[[], float] = time.time, **overrides: Any) -> Pod:
            pod_stack = await stack.enter_async_context(AsyncExitStack())
            pod = await start_pod(pod_stack, Settings(**(base | overrides), pod_id=pod_id), lock_clock=lock_clock)
            pod.stop = pod_stack.aclose  # type: ignore[attr-defined]
            return pod

        yield start


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    return rel, make_git_repo(tmp_path / "data" / rel)


def request(**fields: Any) -> OrchestrateRequest:
    return OrchestrateRequest.model_validate(orchestrate_body(**fields))


def agent_jobs(k8s: Any, task_id: str) -> list[str]:
    return [name for name in k8s.created if task_id in name and "-g0-s0-" in name]


def statuses(kotlin: Any, thread_id: str) -> list[dict[str, Any]]:
    return [s for s in kotlin.statuses if s["threadId"] == thread_id]



async def running_job(k8s: Any, task_id: str) -> str:
    [name] = await until(lambda: agent_jobs(k8s, task_id), "the agent Job")
    await asyncio.to_thread(k8s.wait_for_job, name, "Active")
    return name


async def test_shutdown_leaves_the_agent_job_and_the_next_pod_finishes_with_it(pods, k8s, llm, kotlin,
                                                                                workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"app/slow.py": "done = True"}, extra_instructions="@@SLEEP 3"))
    leaving = await pods("pod-a")
    body = request(workspace_path=rel)
    run = await leaving.manager.start(body)
    name = await running_job(k8s, body.task_id)

    await leaving.stop()  # SIGTERM: the grace period passes mid-step

    assert k8s.processes_alive(name) and name in k8s.jobs() and not k8s.deletes
    assert (await leaving.manager.wait(run)).error == CS.run_suspended  # a Czech request
    assert not statuses(kotlin, run.identity.thread_id)  # Kotlin is not told the run failed

    following = await pods("pod-b")
    stored = await following.runs.get(run.identity.thread_id)
    assert stored is not None and (stored.status, stored.pod_id) == ("running", "pod-a")
    assert await following.recovery.recover_once() == [run.identity.thread_id]
    asked = await asyncio.to_thread(kotlin.wait_for_status, thread_id=run.identity.thread_id, status="interrupted",
                                    timeout=60)

    assert asked["interruptAction"] == "commit"
    assert agent_jobs(k8s, body.task_id) == [name]  # re-attached to the same Job, none created again
    assert (repo / "app/slow.py").read_text() == "done = True\n"
    assert len(statuses(kotlin, run.identity.thread_id)) == 1


async def test_a_pod_whose_slot_was_taken_over_leaves_the_job_and_tells_no_one(pods, k8s, llm, kotlin,
                                                                               workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"app/slow.py": "done = True"}, extra_instructions="@@SLEEP 3"))
    fenced = await pods("pod-a", lock_clock=skewed_clock, lock_heartbeat_seconds=0.2)
    taker = await pods("pod-b")
    body = request(workspace_path=rel)
    run = await fenced.manager.start(body)
    name = await running_job(k8s, body.task_id)

    assert await taker.recovery.recover_once() == [run.identity.thread_id]  # the slot looked stale: taken over

    assert (await asyncio.wait_for(fenced.manager.wait(run), 10)).error == CS.run_suspended  # a Czech request
    assert fenced.count("jervis_lock_lost") == 1 and fenced.count("jervis_orchestrations", outcome="suspended") == 1
    asked = await asyncio.to_thread(kotlin.wait_for_status, thread_id=run.identity.thread_id, status="interrupted",
                                    timeout=60)
    await fenced.stop()  # whatever it had queued for Kotlin is sent now

    assert asked["interruptAction"] == "commit"
    assert agent_jobs(k8s, body.task_id) == [name] and not [d for d in k8s.deletes if d[0] == name]
    assert (repo / "app/slow.py").read_text() == "done = True\n"
    assert len(statuses(kotlin, run.identity.thread_id)) == 1
    stored = await taker.runs.get(run.identity.thread_id)
    assert stored is not None and (stored.status, stored.pod_id) == ("interrupted", "pod-b")
    assert stored.fence == "orchestration_slot_0#2"


async def test_a_fenced_pod_that_finishes_anyway_records_and_pushes_nothing(pods, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), name="intake"),
               Reply(match=node_marker("respond"), content="Odpověď pody A", delay_before=3, times=1, name="slow"),
               Reply(match=node_marker("respond"), content="Odpověď pody B", name="fast"))
    # Its next heartbeat is far away: only the fencing token on the run record stops it.
    fenced = await pods("pod-a", lock_clock=skewed_clock, lock_heartbeat_seconds=30, agent_runner="local")
    taker = await pods("pod-b", agent_runner="local")
    run = await fenced.manager.start(request())
    thread_id = run.identity.thread_id
    await until(lambda: any(r.matched == "slow" for r in llm.requests), "pod A's respond call")

    assert await taker.recovery.recover_once() == [thread_id]
    done = await asyncio.to_thread(kotlin.wait_for_status, thread_id=thread_id, status="done", timeout=30)
    late = await asyncio.wait_for(fenced.manager.wait(run), 15)
    await fenced.stop()

    assert (late.status, late.summary) == ("done", "Odpověď pody A")  # it did finish…
    assert fenced.count("jervis_orchestrations", outcome="fenced") == 1
    assert fenced.count("jervis_orchestrations", outcome="done") == 0
    assert done["summary"] == "Odpověď pody B"  # …but only the new owner's outcome went out
    assert [s["status"] for s in statuses(kotlin, thread_id)] == ["done"]
    stored = await taker.runs.get(thread_id)
    assert stored is not None and (stored.summary, stored.pod_id) == ("Odpověď pody B", "pod-b")
    # Recovery's sweep finds the push in the outbox: the record is marked, nothing announced again.
    assert await taker.manager.unannounced([stored]) == []
    marked = await taker.runs.get(thread_id)
    assert marked is not None and marked.announced
