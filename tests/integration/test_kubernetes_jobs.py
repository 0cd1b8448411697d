"""Agent Jobs through the fake Kubernetes API: lifecycle edges the shared flow tests do not reach."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.k8s import KILL_GRACE_SECONDS
from tests.fixtures.llm_server import Reply
from tests.fixtures.service import configure_cluster, kubernetes_env
from tests.support import (
    approval,
    classification,
    code_task_script,
    file_block,
    git,
    goals_json,
    make_git_repo,
    new_task_id,
    node_marker,
    orchestrate_body,
    reflection,
    steps_json,
    wait_until,
)

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


def body_task(thread_id: str) -> str:
    """The task id inside a thread id (`thread-<task>-<suffix>`)."""
    return thread_id.split("-")[1]


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
    assert name not in cluster.jobs()
    # The deleted pod's processes get SIGTERM, then SIGKILL after the grace period (as a kubelet does).
    wait_until(lambda: not cluster.processes_alive(name) or None, timeout=KILL_GRACE_SECONDS + 5,
               what="the agent's processes to end")
    assert not (repo / "late.txt").exists()


def test_a_cancel_that_cannot_delete_the_job_says_the_agent_may_still_run(kube_service, cluster, llm, kotlin,
                                                                           workspace) -> None:
    """The service account may not delete Jobs (403): the delete is retried, then the run's error
    tells Kotlin that the agent may run on until its deadline instead of ending as if it stopped."""
    rel, _ = workspace
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 60"))
    service = kube_service().start()
    body = orchestrate_body(workspace_path=rel)
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        [name] = wait_until(lambda: agent_jobs(cluster, body["task_id"]), what="the agent Job")
        cluster.wait_for_job(name, "Active")
        cluster.fail_deletes(100)
        client.post(f"/cancel/{thread_id}")
    error = kotlin.wait_for_status(thread_id=thread_id, status="error")["error"]

    assert cluster.refused_deletes == [name] * 3 and name in cluster.jobs()  # retried, and still there
    assert f"Job agenta {name} se nepodařilo smazat (deleting Job {name} failed: 403 Forbidden): agent může " \
           "běžet dál až do svého časového limitu" in error
    metrics = httpx.get(f"{service.url}/metrics", timeout=10).text
    assert 'jervis_agent_jobs_not_deleted_total{agent="aider"} 1.0' in metrics


def test_agent_past_its_deadline_is_retried_then_the_user_is_asked(
    kube_service, cluster, llm, kotlin, workspace,
) -> None:
    rel, _ = workspace
    llm.script(*code_task_script(files={"late.txt": "never"}, extra_instructions="@@SLEEP 60"),
               Reply(match=node_marker("reflect"), content=reflection("ask_user")))
    service = kube_service(agent_timeouts=json.dumps({"aider": 2})).start()
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=40)
        assert asked["interruptAction"] == "clarify" and "timed out after 2 s" in asked["interruptDescription"]
        client.post(f"/approve/{thread_id}", json=approval(True, "stop"))

    error = kotlin.wait_for_status(thread_id=thread_id, status="error", timeout=30)

    assert "timed out after 2 s" in error["error"]
    jobs = agent_jobs(cluster, body_task(thread_id))
    assert len(jobs) == 3  # the timeouts are retried; the last attempt's reflection asks the user
    assert all((job, "Background") in cluster.deletes for job in jobs)  # the timed-out attempts' Jobs are gone


def test_unpullable_image_fails_fast_instead_of_waiting(kube_service, k8s, llm, kotlin, workspace) -> None:
    rel, _ = workspace
    k8s.configure(image_commands={})  # no image runs: every pod waits in ErrImagePull
    llm.script(*code_task_script(), Reply(match=node_marker("reflect"), content=reflection("ask_user")))
    service = kube_service().start()
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=orchestrate_body(workspace_path=rel)).json()["thread_id"]
        asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=30)
        assert asked["interruptAction"] == "clarify"
        assert "could not start: ErrImagePull" in asked["interruptDescription"]
        client.post(f"/approve/{thread_id}", json=approval(True, "stop"))

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


def test_a_retry_is_a_new_job_and_a_restart_reattaches_to_that_attempt(kube_service, cluster, llm, kotlin,
                                                                       workspace) -> None:
    rel, repo = workspace
    llm.script(
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple")),
        Reply(match=node_marker("plan"), content=goals_json("Retry")),
        Reply(match=node_marker("plan_steps"), content=steps_json(
            "@@FAIL @1 flaky network\n@@SLEEP @2 4\n" + file_block("app/retry.py @2", "attempt = 2"))),
        Reply(match=node_marker("reflect"), content=reflection("retry")),
        Reply(match=node_marker("finalize"), content="Hotovo."),
    )
    first = kube_service(pod_id="orchestrator-0").start()
    body = orchestrate_body(workspace_path=rel)
    with first.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    [second_attempt] = wait_until(lambda: [n for n in agent_jobs(cluster, body["task_id"]) if "-a2-" in n],
                                  what="the second attempt's Job")
    cluster.wait_for_job(second_attempt, "Active")
    first.kill()  # mid-attempt 2: its Job keeps running

    kube_service(env=first.env).start()
    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=60)

    assert asked["interruptAction"] == "commit"
    jobs = agent_jobs(cluster, body["task_id"])
    assert len(jobs) == 2 and [n for n in jobs if "-a1-" in n] and jobs.count(second_attempt) == 1
    assert (repo / "app/retry.py").read_text() == "attempt = 2\n"


def test_an_epics_independent_goals_run_as_jobs_at_the_same_time(kube_service, cluster, llm, kotlin,
                                                                   workspace) -> None:
    """Goals a and c of the first wave run as two Jobs at once (EPIC_MAX_PARALLEL_GOALS defaults to 2
    on Kubernetes), each on its worktree; b's Job starts after both ended; one commit per goal."""
    rel, repo = workspace
    goals = [{"id": "a", "title": "Add alpha", "dependencies": []},
             {"id": "b", "title": "Add beta", "dependencies": ["a"]},
             {"id": "c", "title": "Add gamma", "dependencies": []}]
    files = {"Add alpha": "alpha.py", "Add beta": "beta.py", "Add gamma": "gamma.py"}

    def steps(request: Any) -> str:
        title = request.last_user.split("## Goal\n", 1)[1].split("\n", 1)[0]
        return steps_json(f"@@SLEEP 3\n{file_block(files[title], f'# {title}')}")

    llm.script(Reply(match=node_marker("intake"), content=classification("epic", "code", "complex")),
               Reply(match=node_marker("plan_epic"), content=json.dumps({"goals": goals})),
               Reply(match=node_marker("plan_steps"), content=steps),
               Reply(match=node_marker("review_epic"),
                     content=json.dumps({"approved": True, "issues": [], "summary": "ok"})))
    service = kube_service().start()
    body = orchestrate_body(workspace_path=rel)
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
        kotlin.wait_for_status(thread_id=thread_id, status="interrupted")  # the plan
        client.post(f"/approve/{thread_id}", json=approval(True, "ano"))

        def wave_jobs() -> list[str] | None:
            names = [n for n in cluster.created if body["task_id"] in n and "-s0-a1-" in n]
            return names if {"-g0-", "-g1-"} <= {n[n.index("-g"):n.index("-s0")] + "-" for n in names} else None

        first, second = sorted(wave_jobs() or wait_until(wave_jobs, what="two goals' Jobs"))[:2]
        active = [cluster.wait_for_job(name, "Active") for name in (first, second)]
        assert all(job["status"].get("ready") == 1 for job in active)  # both run at once
        wait_until(lambda: [s for s in kotlin.statuses if s.get("threadId") == thread_id
                            and s.get("interruptAction") == "commit"], timeout=60, what="the commit gate")
        client.post(f"/approve/{thread_id}", json=approval(True, "ano"))
    kotlin.wait_for_status(thread_id=thread_id, status="done", timeout=60)

    later = [n for n in cluster.created if body["task_id"] in n and "-g2-s0-a1-" in n]
    assert len(later) == 1 and cluster.created.index(later[0]) > max(map(cluster.created.index, (first, second)))
    log = git(repo, "log", "--format=%s", "-n", "3").splitlines()
    assert [line.split(" ", 1)[1] for line in log] == ["Add beta", "Add gamma", "Add alpha"]
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_silent_agent_is_stalled_its_job_deleted_and_the_retry_is_a_new_job(kube_service, cluster, llm, kotlin,
                                                                              workspace) -> None:
    """AGENT_STALL_SECONDS: attempt 1 sleeps without a word or a change, far inside its timeout; the
    runner deletes its Job and fails the attempt, and the retry runs as a Job of its own."""
    rel, repo = workspace
    llm.script(
        Reply(match=node_marker("intake"), content=classification("single_task", "code", "simple")),
        Reply(match=node_marker("plan"), content=goals_json("Stall")),
        Reply(match=node_marker("plan_steps"), content=steps_json(
            "@@SLEEP @1 60\n" + file_block("app/stall.py @2", "attempt = 2"))),
        Reply(match=node_marker("reflect"), content=reflection("retry")),
    )
    service = kube_service(agent_stall_seconds="1.5").start()
    body = orchestrate_body(workspace_path=rel)
    with service.client() as client:
        thread_id = client.post("/orchestrate/stream", json=body).json()["thread_id"]
    asked = kotlin.wait_for_status(thread_id=thread_id, status="interrupted", timeout=40)

    assert asked["interruptAction"] == "commit"
    jobs = agent_jobs(cluster, body["task_id"])
    [first] = [n for n in jobs if "-a1-" in n]
    assert len(jobs) == 2 and [n for n in jobs if "-a2-" in n]  # the retry is a new Job
    assert (first, "Background") in cluster.deletes and first not in cluster.jobs()
    wait_until(lambda: not cluster.processes_alive(first) or None, timeout=KILL_GRACE_SECONDS + 5,
               what="the stalled agent's processes to end")
    stalled = "Stalled: no output and no change in the workspace for 1.5 s"
    assert any(stalled in p["message"] for p in kotlin.progress if p["taskId"] == body["task_id"])  # the retry's
    assert (repo / "app/stall.py").read_text() == "attempt = 2\n"
