"""Durability and the cluster-wide limit: real service processes sharing one nx-27017."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.llm_server import Reply
from tests.support import (
    approval,
    classification,
    code_task_script,
    git,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    wait_until,
)

pytestmark = pytest.mark.slow


def test_interrupted_run_is_resumed_by_a_fresh_process(service_factory, llm, kotlin, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    first = service_factory().start()
    body = orchestrate_body(workspace_path=rel)
    with first.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
    first.stop()

    second = service_factory(env=first.env).start()
    with second.client() as client:
        assert client.get(f"/status/{thread_id}").json()["interrupt_action"] == "commit"
        assert client.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code == 200
        done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["branch"] == f"task/{body['task_id']}" and done["artifacts"] == ["app/health.py"]
    assert git(repo, "rev-list", "--count", done["branch"]).strip() == "2"
    resumed = [p for p in kotlin.progress if p["taskId"] == body["task_id"]]
    assert all(p["clientId"] == body["client_id"] for p in resumed)


def test_two_pods_share_one_orchestration_slot(service_factory, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30))
    pod_a = service_factory().start()
    pod_b = service_factory(env={**pod_a.env, "POD_ID": "pod-b"}).start()
    with pod_a.client() as a, pod_b.client() as b:
        thread_id = a.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
        kotlin.wait_for_progress(node="intake")

        assert b.get("/health").json()["busy"] is False  # its own semaphore is free…
        refused = b.post("/orchestrate/stream", json=orchestrate_body())
        assert refused.status_code == 429  # …but the MongoDB lock is not
        assert b.get(f"/status/{thread_id}").json()["status"] == "running"  # B sees A's lock

        a.post(f"/cancel/{thread_id}")
        kotlin.wait_for_status(thread_id=thread_id, status="error")
        llm.script(Reply(match=node_marker("intake"), content=classification()),
                   Reply(match=node_marker("respond"), content="B běží"))
        accepted = b.post("/orchestrate/stream", json=orchestrate_body())
        assert accepted.status_code == 200
        assert kotlin.wait_for_status(thread_id=accepted.json()["thread_id"], status="done")["summary"] == "B běží"


def slow_then_fast_respond(answer: str, hold: threading.Event | None = None) -> list[Reply]:
    """intake and evidence are instant; the first respond call hangs (the pod dies in it); the
    next one answers at once, or once `hold` is set."""
    return [
        Reply(match=node_marker("intake"), content=classification(), name="intake"),
        Reply(match=node_marker("respond"), content="never", delay_before=60, times=1, name="respond-slow"),
        Reply(match=node_marker("respond"), content=answer, name="respond", hold=hold),
    ]


def wait_for_slow_respond(llm: Any) -> None:
    """The dying pod must be inside its LLM call (not just past the progress push)."""
    wait_until(lambda: any(r.matched == "respond-slow" for r in llm.requests), what="the slow respond call")


def nodes_of(kotlin: Any, task_id: str) -> list[str]:
    return [p["node"] for p in kotlin.progress if p["taskId"] == task_id]


def test_crashed_pod_restarting_with_its_id_continues_from_the_checkpoint(service_factory, llm, kotlin) -> None:
    llm.script(*slow_then_fast_respond("Po restartu"))
    pod = service_factory(pod_id="orchestrator-0").start()
    body = orchestrate_body()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    pod.kill()

    restarted = service_factory(env=pod.env).start()  # same POD_ID, its old slot is still "fresh"
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    assert done["summary"] == "Po restartu"
    assert nodes_of(kotlin, body["task_id"]) == ["intake", "evidence_pack", "respond", "respond", "finalize"]
    with restarted.client() as client:
        assert client.get(f"/status/{thread_id}").json()["status"] == "done"
    assert not [s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] == "error"]


def test_run_of_a_dead_pod_is_adopted_by_another_pod(service_factory, llm, kotlin) -> None:
    release = threading.Event()  # the adopted run cannot end before the survivor was asked about it
    llm.script(*slow_then_fast_respond("Adoptováno", hold=release))
    # A held call sends no token: the token heartbeat must outlast the hold.
    dead = service_factory(lock_stale_seconds=2, lock_heartbeat_seconds=0.5, heartbeat_dead_seconds=30).start()
    body = orchestrate_body()
    with dead.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    dead.kill()

    survivor = service_factory(env={**dead.env, "POD_ID": "survivor", "RECOVERY_INTERVAL_SECONDS": "0.5"}).start()
    with survivor.client() as client:
        assert client.get(f"/status/{thread_id}").json()["status"] == "running"  # adoption pending
        release.set()
        done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)

    assert done["summary"] == "Adoptováno"
    assert nodes_of(kotlin, body["task_id"]).count("intake") == 1


def test_graceful_shutdown_suspends_the_run_for_another_pod(service_factory, llm, kotlin) -> None:
    llm.script(*slow_then_fast_respond("Pokračuje jinde"))
    leaving = service_factory(shutdown_grace_seconds=0.5).start()
    body = orchestrate_body()
    with leaving.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_for_slow_respond(llm)
    leaving.stop()  # SIGTERM

    assert not [s for s in kotlin.statuses if s["threadId"] == thread_id]  # Kotlin is not told to fail it
    service_factory(env={**leaving.env, "POD_ID": "next", "RECOVERY_INTERVAL_SECONDS": "0.5"}).start()
    done = kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=30)
    assert done["summary"] == "Pokračuje jinde"


def test_racing_approvals_resume_the_thread_once(service_factory, llm, kotlin, data_root: Path) -> None:
    rel = f"clients/c1/{new_task_id()}"
    repo = make_git_repo(data_root / rel)
    llm.script(*code_task_script())
    pod = service_factory(max_concurrent_orchestrations=2).start()
    with pod.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        def approve(_: int) -> int:
            with pod.client() as own:
                return own.post(f"/approve/{thread_id}", json=approval(True, "ano")).status_code

        with ThreadPoolExecutor(2) as pool:
            codes = sorted(pool.map(approve, range(2)))
        assert codes == [200, 409]
        kotlin.wait_for_status(thread_id=thread_id, status="done")
    assert git(repo, "rev-list", "--count", "--all").strip() == "2"
    assert len([s for s in kotlin.statuses if s["threadId"] == thread_id and s["status"] == "done"]) == 1
