"""Agent Jobs through the fake Kubernetes API: lifecycle edges the shared flow tests do not reach."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.service import configure_cluster, kubernetes_env
from tests.support import approval, code_task_script, git, make_git_repo, new_task_id, orchestrate_body, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(k8s: Any) -> Any:
    configure_cluster(k8s)
    return k8s


@pytest.fixture
def kube_service(service_factory: Any, k8s_server: Any, tmp_path: Path) -> Any:
    """A Kubernetes-runner service on its own databases (`env=` restarts one on the same)."""
    def make(env: dict[str, str] | None = None, **overrides: Any) -> Any:
        if env is not None:
            return service_factory(env=env)
        return service_factory(**kubernetes_env(k8s_server, tmp_path / "kubeconfig"), **overrides)
    return make


@pytest.fixture
def workspace(data_root: Path) -> tuple[str, Path]:
    rel = f"clients/c1/{new_task_id()}"
    return rel, make_git_repo(data_root / rel)


def agent_jobs(k8s: Any, task_id: str) -> list[str]:
    return [name for name in k8s.created if task_id in name and "-g0-s0-" in name]


def test_restarted_orchestrator_reattaches_to_the_running_job(kube_service, cluster, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"app/slow.py": "done = True"}, extra_instructions="@@SLEEP 4"))
    first = kube_service(pod_id="orchestrator-0").start()
    body = orchestrate_body(workspace_path=rel)
    with first.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    wait_until(lambda: agent_jobs(cluster, body["task_id"]), what="the agent Job")
    first.kill()  # mid-step: the Job keeps running in the cluster

    kube_service(env=first.env).start()
    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)

    assert asked["interruptAction"] == "commit"
    assert len(agent_jobs(cluster, body["task_id"])) == 1  # re-attached, no second Job
    assert (repo / "app/slow.py").read_text() == "done = True\n"


def test_cancel_deletes_the_job_and_its_agent(kube_service, cluster, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 60"))
    service = kube_service().start()
    body = orchestrate_body(workspace_path=rel)
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        [name] = wait_until(lambda: agent_jobs(cluster, body["task_id"]), what="the agent Job")
        cluster.wait_for_job(name, "Active")
        client.post(f"/cancel/{thread_id}")
    kotlin.wait_for_status(thread_id=thread_id, status="error")

    assert (name, "Background") in cluster.deletes
    assert not cluster.processes_alive(name) and name not in cluster.jobs()
    assert not (repo / "late.txt").exists()


def test_agent_past_its_deadline_fails_the_run(kube_service, cluster, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 60"))
    service = kube_service(agent_timeouts=json.dumps({"aider": 2})).start()
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]

    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=30)

    assert "timed out after 2 s" in error["error"]


def test_unpullable_image_fails_fast_instead_of_waiting(kube_service, k8s, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    k8s.configure(image_commands={})  # no image runs: every pod waits in ErrImagePull
    llm.script(*code_task_script())
    service = kube_service().start()
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]

    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=30)

    assert "could not start: ErrImagePull" in error["error"]


def test_commit_runs_as_a_git_job(kube_service, cluster, llm, kotlin, workspace) -> None:
    rel, repo = workspace
    llm.script(*code_task_script())
    service = kube_service().start()
    body = orchestrate_body(workspace_path=rel)
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")
        client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    done = kotlin.wait_for_status(thread_id=thread_id, status="done")

    commit_jobs = [n for n in cluster.created if body["task_id"] in n and "-commit-" in n]
    assert len(commit_jobs) == 1
    job = cluster.jobs().get(commit_jobs[0]) or {}
    if job:
        env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["ALLOW_GIT"] == "true" and env["JERVIS_MODE"] == "git"
    assert git(repo, "log", "-1", "--format=%s", done["branch"]).startswith(f"task({body['task_id']}):")
