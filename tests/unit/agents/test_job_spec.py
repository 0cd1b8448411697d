"""Job spec (app/agents/job_spec.py): names, labels, the V1Job of spec §10.2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from app.agents.base import AgentJob
from app.agents.job_spec import build_job, job_name
from app.config import Settings

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def agent_job(**overrides: object) -> AgentJob:
    fields = {"thread_id": "thread-67ad0f1e2b3c4d5e6f708192-1a2b3c4d", "task_id": "67ad0f1e2b3c4d5e6f708192",
              "client_id": "c1", "project_id": "p1", "goal_index": 1, "step_index": 2, "agent_type": "aider",
              "workspace": Path("/opt/jervis/data/clients/c1/p1"), "timeout_seconds": 600} | overrides
    return AgentJob(**fields)  # type: ignore[arg-type]


def test_a_goal_run_in_its_worktree_and_again_alone_are_different_jobs() -> None:
    """A goal that conflicted in its wave runs again alone with the same goal, step and attempt: on
    Kubernetes the same name would re-attach to the finished Job of its worktree run."""
    alone = agent_job()
    in_wave = agent_job(workspace=Path("/opt/jervis/data/clients/c1/p1.jervis-goals/thread-x-g1"))
    assert job_name(in_wave) != job_name(alone)
    assert job_name(in_wave) == job_name(agent_job(workspace=in_wave.workspace))  # a restart re-attaches


@pytest.mark.parametrize("task_id", ["67ad0f1e2b3c4d5e6f708192", "UPPER_case.and-dots", "x" * 200, "___"])
def test_job_name_is_a_dns_label_of_at_most_63_chars(task_id: str) -> None:
    name = job_name(agent_job(task_id=task_id, thread_id=f"thread-{task_id}-abcd1234"))
    assert len(name) <= 63 and DNS_LABEL.match(name), name


def test_job_name_is_deterministic_and_distinct_per_step_mode_attempt_and_revision() -> None:
    assert job_name(agent_job()) == job_name(agent_job())
    names = {job_name(agent_job(step_index=3)), job_name(agent_job(goal_index=0)), job_name(agent_job(mode="commit")),
             job_name(agent_job(attempt=2)), job_name(agent_job(thread_id="thread-other-00000000")),
             job_name(agent_job(revision=1)), job_name(agent_job(mode="test")), job_name(agent_job())}
    assert len(names) == 8


@pytest.mark.parametrize(
    ("overrides", "prefix"),
    [
        ({}, "jervis-67ad0f1e2b3c4d5e6f708192-g1-s2-a1-"),
        ({"attempt": 3}, "jervis-67ad0f1e2b3c4d5e6f708192-g1-s2-a3-"),
        ({"attempt": 2, "revision": 1}, "jervis-67ad0f1e2b3c4d5e6f708192-g1-s2-r1-a2-"),
        ({"attempt": 2, "mode": "test"}, "jervis-67ad0f1e2b3c4d5e6f708192-g1-s2-a2-test-"),
        ({"mode": "commit"}, "jervis-67ad0f1e2b3c4d5e6f708192-commit-"),
    ],
    ids=["first-attempt", "third-attempt", "replanned", "tests-of-attempt-2", "git"],
)
def test_job_name_carries_the_attempt_in_readable_form(overrides: dict[str, object], prefix: str) -> None:
    assert job_name(agent_job(**overrides)).startswith(prefix)


def test_job_spec_follows_section_10_2() -> None:
    settings = Settings(container_registry="registry.example/jervis", agent_image_tag="v7", k8s_namespace="agents",
                        data_root=Path("/opt/jervis/data"), ollama_url="http://ollama:11434",
                        knowledgebase_url="http://kb:8080")
    body = ApiClient().sanitize_for_serialization(build_job(settings, agent_job()))

    assert body["metadata"]["namespace"] == "agents"
    assert body["metadata"]["labels"] == {"app": "jervis-agent", "agent-type": "aider",
                                          "task-id": "67ad0f1e2b3c4d5e6f708192", "jervis-mode": "agent",
                                          "jervis-thread": "thread-67ad0f1e2b3c4d5e6f708192-1a2b3c4d",
                                          "jervis-step": "g1-s2-r0", "jervis-attempt": "1"}
    spec = body["spec"]
    assert (spec["backoffLimit"], spec["ttlSecondsAfterFinished"], spec["activeDeadlineSeconds"]) == (0, 300, 600)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["securityContext"]["runAsUser"] == 1000
    assert pod["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "jervis-data-pvc"}},
                              {"name": "home", "emptyDir": {"sizeLimit": "1Gi"}},
                              {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}]
    container = pod["containers"][0]
    assert container["image"] == "registry.example/jervis/jervis-aider:v7"
    # Only the workspace of the volume (this one has no .git on this machine), never DATA_ROOT itself.
    assert container["volumeMounts"] == [
        {"mountPath": "/opt/jervis/data/clients/c1/p1", "name": "data", "subPath": "clients/c1/p1"},
        {"mountPath": "/home/jervis-agent", "name": "home"}, {"mountPath": "/tmp", "name": "tmp"}]
    assert container["resources"] == {"limits": {"cpu": "1000m", "memory": "1Gi"},
                                      "requests": {"cpu": "250m", "memory": "256Mi"}}
    env = {e["name"]: e for e in container["env"]}
    plain = {name: e["value"] for name, e in env.items() if "value" in e}
    assert plain["WORKSPACE_PATH"] == "/opt/jervis/data/clients/c1/p1" and plain["ALLOW_GIT"] == "false"
    assert {"TASK_ID", "CLIENT_ID", "PROJECT_ID", "OLLAMA_URL", "KNOWLEDGEBASE_URL"} <= set(plain)
    assert plain["JERVIS_MODE"] == "agent" and plain["JERVIS_ATTEMPT"] == "1"
    # Aider on its default Ollama model needs no key: the Job references none (issue 40; it held all five)
    assert [name for name, e in env.items() if "valueFrom" in e] == []
    claude = ApiClient().sanitize_for_serialization(build_job(settings, agent_job(
        agent_type="claude", cloud_providers=["anthropic"])))
    secret = {e["name"]: e for e in claude["spec"]["template"]["spec"]["containers"][0]["env"]}["ANTHROPIC_API_KEY"]
    assert "value" not in secret  # by reference, never inline
    assert secret["valueFrom"]["secretKeyRef"] == {"key": "ANTHROPIC_API_KEY", "name": "jervis-agent-secrets",
                                                   "optional": True}


def test_git_jobs_allow_git_and_run_the_entrypoints_git_mode() -> None:
    body = ApiClient().sanitize_for_serialization(build_job(Settings(), agent_job(mode="push", agent_type="claude")))
    env = {e["name"]: e.get("value") for e in body["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ALLOW_GIT"] == "true" and env["JERVIS_MODE"] == "git"
    assert body["metadata"]["labels"]["jervis-mode"] == "push"


def test_test_jobs_run_the_entrypoints_test_mode_without_agent_secrets() -> None:
    body = ApiClient().sanitize_for_serialization(build_job(Settings(), agent_job(mode="test", attempt=2)))
    env = {e["name"]: e for e in body["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["JERVIS_MODE"]["value"] == "test" and env["ALLOW_GIT"]["value"] == "false"
    assert env["JERVIS_ATTEMPT"]["value"] == "2"
    assert not [name for name, e in env.items() if "valueFrom" in e]  # the project's tests get no API keys


@pytest.mark.parametrize("mode", ["agent", "test", "commit", "push"])
def test_every_job_runs_restricted_without_a_token_in_the_agents_namespace(mode: str) -> None:
    body = ApiClient().sanitize_for_serialization(build_job(Settings(), agent_job(mode=mode)))
    assert body["metadata"]["namespace"] == "jervis-agents"
    pod = body["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
                                      "fsGroupChangePolicy": "OnRootMismatch",
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    [container] = pod["containers"]
    assert container["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True, "seccompProfile": {"type": "RuntimeDefault"}}
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts[env["HOME"]] == "home" and mounts["/tmp"] == "tmp"
