"""Durability and the cluster-wide limit: real service processes sharing one nx-27017."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.llm_server import Reply
from tests.support import (
    approval, classification, code_task_script, git, make_git_repo, new_task_id, node_marker, orchestrate_body,
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


def test_run_of_a_crashed_process_reports_error_on_status(service_factory, llm, kotlin) -> None:
    llm.script(Reply(match=node_marker("intake"), content=classification(), delay_before=30))
    crashed = service_factory(lock_stale_seconds=2, lock_heartbeat_seconds=0.5).start()
    with crashed.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body()).json()["thread_id"]
    kotlin.wait_for_progress(node="intake")
    crashed.kill()

    survivor = service_factory(env={**crashed.env, "POD_ID": "survivor"}).start()
    with survivor.client() as client:
        # Until the dead pod's lock goes stale (2 s) the run still counts as running.
        status = wait_until(lambda: (s := client.get(f"/status/{thread_id}").json())["status"] != "running" and s,
                            timeout=10, what="stale lock")
        assert status["status"] == "error" and "restart" in status["error"]
        assert client.post("/orchestrate/stream", json=orchestrate_body()).status_code == 200
